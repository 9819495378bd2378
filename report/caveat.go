package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
	"github.com/habench/habench/topology"
)

// Warn marks a ratio that cannot be read as the topology's (see Caveat).
const Warn = "⚠"

// Caveat marks ratios that compare CPU-bound cells (the host's CPU, not the topology, set
// the numbers) or have no confidence interval (one repeat), and remembers which applied
// for the note under the table. The zero value is ready to use; report's tables and the
// scenario's console and comparison.md share it.
type Caveat struct{ bound, noCI bool }

// Applies says whether change c, of a cell bound or not against a reference bound or
// not, is to be marked with Warn, and records why.
func (cv *Caveat) Applies(c *stats.Change, bound bool) bool {
	if c == nil || !c.OK || c.Verdict == stats.Reference {
		return false
	}
	noCI := c.Verdict == stats.NoCI
	if !bound && !noCI {
		return false
	}
	cv.bound, cv.noCI = cv.bound || bound, cv.noCI || noCI
	return true
}

// Note explains the marks used ("" when none was).
func (cv Caveat) Note() string {
	var why []string
	if cv.bound {
		why = append(why, "compares CPU-bound cells: the ratio measures the host, not the topology")
	}
	if cv.noCI {
		why = append(why, "no confidence interval (one repeat): the difference cannot be told from noise")
	}
	if len(why) == 0 {
		return ""
	}
	return Warn + " " + strings.Join(why, "; ") + "."
}

// cellBound says a run of cell c had its busiest host CPU-saturated.
func (res *Results) cellBound(c *stats.Cell) bool {
	if c == nil {
		return false
	}
	for _, r := range res.Runs {
		if slices.Contains(c.Runs, r.id()) {
			if h := r.BusiestHost(); h != nil && h.CPUSaturated {
				return true
			}
		}
	}
	return false
}

// baseCell is the baseline topology's cell of c's group (nil without one).
func baseCell(cells []*stats.Cell, c *stats.Cell) *stats.Cell {
	for _, b := range cells {
		if b.IsBase && b.Group == c.Group && b.ReusedFrom == "" {
			return b
		}
	}
	for _, b := range cells {
		if b.IsBase && b.Group == c.Group {
			for _, x := range cells { // a reused baseline cell: the one it reuses
				if x.Topology == b.Topology && x.Group == b.ReusedFrom {
					return x
				}
			}
		}
	}
	return nil
}

// Probe is the run's probe writer's result (summary.json "probe"), nil without one.
func (r *Run) Probe() *schema.ProbeSummary {
	if r.Summary == nil {
		return nil
	}
	return r.Summary.Probe
}

// lostAcked is the comparison's "lost acked commits" cell: "550 of 1424", "not checked",
// "n/a" without a probe writer.
func lostAcked(p *schema.ProbeSummary) string {
	switch {
	case p == nil:
		return "n/a"
	case p.Error != "":
		return "not checked"
	}
	return fmt.Sprintf("%d of %d", p.LostAcknowledged, p.Acknowledged)
}

// flavorName is "MySQL 9.7.4", "MariaDB 10.11.19" (topology.FlavorTitle).
func flavorName(flavor, version string) string { return topology.FlavorTitle(flavor, version) }

// flavorNote is serverNote followed by the caveats of the flavors the runs used
// (topology.FlavorDef.Caveat); "" when there is neither.
func flavorNote(rows []Row) string {
	var flavors []string
	for _, r := range rows {
		if r.Run != nil {
			flavors = append(flavors, r.Run.Flavor())
		}
	}
	return strings.TrimSpace(serverNote(rows) + " " + strings.Join(topology.FlavorCaveats(flavors), " "))
}

// serverNote names the runs on another server flavor or version than the baseline's
// ("" when none is): their ratios compare the servers too.
func serverNote(rows []Row) string {
	var base *Run
	for _, r := range rows {
		if r.IsBaseline {
			base = r.Run
			break
		}
	}
	if base == nil || base.Flavor() == "" {
		return ""
	}
	var other []string
	for _, r := range rows {
		f, v := r.Run.Flavor(), r.Run.Version()
		if f == "" || (f == base.Flavor() && v == base.Version()) {
			continue
		}
		s := r.Run.cellTopology() + " (" + flavorName(f, v) + ")"
		if !slices.Contains(other, s) {
			other = append(other, s)
		}
	}
	if len(other) == 0 {
		return ""
	}
	return fmt.Sprintf("Other server than the baseline %s (%s): %s; their ratios vs base compare the servers as well as the topologies.",
		base.cellTopology(), flavorName(base.Flavor(), base.Version()), strings.Join(other, ", "))
}

// dirBound says the run in directory dir (a sweep point's, relative to the sweep) had
// its busiest host CPU-saturated.
func (res *Results) dirBound(dir string) bool {
	if dir == "" {
		return false
	}
	for _, r := range res.Runs {
		if filepath.Base(r.Dir) == filepath.Base(dir) {
			h := r.BusiestHost()
			return h != nil && h.CPUSaturated
		}
	}
	return false
}
