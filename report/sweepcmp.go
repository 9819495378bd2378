package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// ComparisonMarkdownFile is the name of a scenario run's comparison in its directory.
const ComparisonMarkdownFile = "comparison.md"

// ComparisonMarkdown is comparison.md, rendered from sweep.json (f: the scenario's name,
// description, baseline, workload, scale, standing links and axes) and comparison.json's
// rows (with Group set, as ReadComparison does): per group of the non-topology axes (in
// the rows' order), the topologies against the baseline (ComparisonTable), StatsNote,
// then a line for every row that did not complete and every topology (sweep.json's
// first axis) that has no row. A sweep of one topology has no baseline: no Baseline
// line and no vs base columns. It never fails.
func ComparisonMarkdown(f *schema.SweepFile, rows []schema.ComparisonRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", f.Scenario)
	if d := strings.TrimSpace(f.Description); d != "" {
		b.WriteString(d + "\n\n")
	}
	compared := sweepCompared(f, rows)
	b.WriteString(comparisonPreamble(f, rows, compared))
	var groups []string
	byGroup := map[string][]schema.ComparisonRow{}
	for _, r := range rows {
		if _, ok := byGroup[r.Group]; !ok {
			groups = append(groups, r.Group)
		}
		byGroup[r.Group] = append(byGroup[r.Group], r)
	}
	for _, g := range groups {
		b.WriteString("\n")
		if g != "" {
			fmt.Fprintf(&b, "## %s\n\n", g)
		}
		hasBase := false
		for _, r := range byGroup[g] {
			hasBase = hasBase || r.Topology == f.Baseline
		}
		if compared && !hasBase {
			fmt.Fprintf(&b, "(the baseline %s has no run here: no percentages)\n\n", f.Baseline)
		}
		b.WriteString(comparisonTable(byGroup[g], compared))
	}
	b.WriteString("\n" + StatsNote(rows) + "\n")
	ran := map[string]bool{}
	for _, r := range rows {
		ran[r.Topology] = true
		if r.Error != "" {
			fmt.Fprintf(&b, "\n**%s (cell %d) did not complete:** %s (its numbers cover only the part that ran).\n", r.Topology, r.Cell, r.Error)
		}
	}
	if len(f.Axes) > 0 {
		for _, v := range f.Axes[0].Values {
			if !ran[v] {
				fmt.Fprintf(&b, "\n**%s was not run** (the scenario stopped before it, or its deployment failed: sweep.json says).\n", v)
			}
		}
	}
	return b.String()
}

// sweepCompared reports whether the sweep compares topologies: more than one among its
// topology axis (sweep.json's first) and its rows, and a baseline named. A sweep of one
// topology (sweep.json of an older habench names one all the same) has none.
func sweepCompared(f *schema.SweepFile, rows []schema.ComparisonRow) bool {
	seen := map[string]bool{}
	for _, a := range f.Axes {
		if a.Kind == schema.AxisTopology {
			for _, v := range a.Values {
				seen[v] = true
			}
		}
	}
	for _, r := range rows {
		seen[r.Topology] = true
	}
	return f.Baseline != "" && len(seen) > 1
}

// comparisonPreamble is comparison.md's paragraph under the title: baseline (when
// compared), workload, scale, the standing links and what a links axis means.
func comparisonPreamble(f *schema.SweepFile, rows []schema.ComparisonRow, compared bool) string {
	var b strings.Builder
	if compared {
		fmt.Fprintf(&b, "Baseline: %s. ", f.Baseline)
	}
	fmt.Fprintf(&b, "Workload: %s. Scale: %s.", f.Workload, f.Scale)
	if f.Links != "" {
		fmt.Fprintf(&b, " Links between nodes (one-way, as `habench netem apply %s`; requested and achieved round trips in each run's manifest.json).", f.Links)
	}
	linksAxis := false
	for _, a := range f.Axes {
		linksAxis = linksAxis || a.Kind == schema.AxisLinks
	}
	if linksAxis {
		b.WriteString(" Links are one-way delays between every pair of nodes (round trip twice that); requested and achieved round trips are in each run's manifest.json.")
		for _, r := range rows {
			if r.LinksControl != "" {
				b.WriteString(" The links=none cells of multi-node topologies ran through the userspace link at zero delay, the path the delayed cells take, so a change along links is the delay's alone; the link's own cost (the round trip it added to the plain bridge) is given with them. `links: [bridge, ...]` adds a cell on the plain bridge.")
				break
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

// ReadComparison reads dir/comparison.json and sets each row's Group from f's axes (all
// but topology and repeat, in sweep.json's order: stats.GroupOf of the row's Axes), as
// the sweep executor set it. Errors: *LoadError naming the file when it cannot be read
// or is malformed.
func ReadComparison(dir string, f *schema.SweepFile) ([]schema.ComparisonRow, error) {
	path := filepath.Join(dir, schema.ComparisonName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	var rows []schema.ComparisonRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	var axes []stats.Axis
	for _, a := range f.Axes {
		if a.Kind != schema.AxisTopology && a.Kind != schema.AxisRepeat {
			axes = append(axes, stats.Axis{Name: a.Name})
		}
	}
	for i := range rows {
		rows[i].Group = stats.GroupOf(axes, rows[i].Axes)
	}
	return rows, nil
}
