package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/habench/habench/schema"
)

// AnomaliesLine is the one-line verdict of a checker workload, e.g. "Anomalies: none
// found (register on n1, 1200 operations: 1180 ok, 20 failed, 0 unknown)" or
// "Anomalies: 31 lost-update (P4), 40 committed updates lost (register on n1, ...)".
func AnomaliesLine(s *schema.ChecksSummary) string {
	what := fmt.Sprintf("%s on %s, %d operations: %d ok, %d failed, %d unknown", s.Workload, s.Node, s.Ops, s.OK, s.Failed, s.Unknown)
	switch {
	case s.Error != "":
		return fmt.Sprintf("Anomalies: not checked: %s (%s)", s.Error, what)
	case s.AnomalyCount == 0:
		return fmt.Sprintf("Anomalies: none found (%s)", what)
	}
	types := make([]string, 0, len(s.AnomalyTypes))
	for t, n := range s.AnomalyTypes {
		types = append(types, fmt.Sprintf("%d %s", n, anomalyTitle(t)))
	}
	sort.Strings(types)
	if s.LostUpdates > 0 {
		types = append(types, fmt.Sprintf("%d committed updates lost", s.LostUpdates))
	}
	return fmt.Sprintf("Anomalies: %s (%s)", strings.Join(types, ", "), what)
}

// anomalyTitle names an anomaly type in a sentence ("lost-update (P4)").
func anomalyTitle(t string) string {
	if t == "lost-update" {
		return "lost-update (P4)"
	}
	return t
}

// AnomaliesSection is report.md's "Anomalies" section: the verdict line and the
// explanations of the first anomalies.
func AnomaliesSection(b *strings.Builder, s *schema.ChecksSummary) {
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\n## Anomalies\n\n%s.\n", AnomaliesLine(s))
	for _, a := range s.Anomalies {
		fmt.Fprintf(b, "\n- %s", a.Explanation)
	}
	if len(s.Anomalies) > 0 {
		b.WriteString("\n")
	}
	if s.AnomalyCount > len(s.Anomalies) {
		fmt.Fprintf(b, "\n(the first %d of %d; every operation is in %s, also as %s for Elle)\n", len(s.Anomalies), s.AnomalyCount, schema.HistoryFile, schema.HistoryEDNFile)
	}
}
