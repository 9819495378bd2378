package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// Report renders report.md of a run from its manifest and summary as they are written
// to manifest.json and summary.json: report.RunMarkdown over their JSON. A manifest or
// summary that does not encode renders as the error.
func Report(m *schema.Manifest, s *schema.Summary) string {
	mb, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprintf("manifest: %v\n", err)
	}
	sb, err := json.Marshal(s)
	if err != nil {
		return fmt.Sprintf("summary: %v\n", err)
	}
	r, err := report.RunFromJSON("", mb, sb)
	if err != nil {
		return err.Error() + "\n"
	}
	return report.RunMarkdown(r, m.Topology == nil || scenario.Deploys(*m.Topology))
}

// WriteRunReport renders report.md of the run directory dir again from its
// manifest.json and summary.json (what `habench report DIR` does for a run, as it
// renders report.html and report.csv; report.RunMarkdown). Error when either cannot be
// read or report.md cannot be written.
func WriteRunReport(dir string) error {
	r, err := report.LoadRunSummary(dir)
	if err != nil {
		return err
	}
	if r.Summary == nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, schema.SummaryFile), os.ErrNotExist)
	}
	deployed := true
	if r.Manifest.Topology != nil {
		var spec topology.Spec
		if b, err := json.Marshal(r.Manifest.Topology); err == nil && json.Unmarshal(b, &spec) == nil {
			deployed = scenario.Deploys(spec)
		}
	}
	return (&Results{Dir: dir}).WriteFile("report.md", report.RunMarkdown(r, deployed))
}
