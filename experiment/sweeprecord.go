package experiment

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// recordCell fills rec from the run's result (res may be nil): its directory, the knobs
// read back from its manifest, the swept values, the summary and the links' added delay.
// ran says whether the run succeeded (its knobs were then set).
func (sw *sweepRun) recordCell(rec *schema.CellRecord, cell *scenario.Cell, b *Bench, res *Outcome, knobs []topology.KnobSetting, ran bool) {
	if res != nil && res.Dir != "" {
		rec.Dir, _ = filepath.Rel(sw.dir, res.Dir)
		if len(knobs) > 0 {
			knobsReadBack(filepath.Join(res.Dir, "manifest.json"), knobs, rec.ReadBack)
		}
	}
	sw.cellValues(rec, cell, ran)
	rec.Via = viaOf(cell)
	if res != nil && res.Summary != nil {
		fillRecord(rec, res.Summary)
	}
	if res != nil && res.Dir != "" && b.Links != nil {
		rec.LinkAddedMs = linkAdded(filepath.Join(res.Dir, "manifest.json"))
	}
}

// cellValues fills the swept values from rec.ReadBack (after the run for knobs); ran
// says whether the run got as far as setting its knobs.
func (sw *sweepRun) cellValues(rec *schema.CellRecord, cell *scenario.Cell, ran bool) {
	rec.Values = map[string]string{}
	for _, as := range append(slices.Clone(cell.ServerOptions), cell.Knobs...) {
		if !ran && rec.ReadBack[as.Settings[0].Name] == nil {
			continue // the run failed before its knobs were set
		}
		v, warns := readBackValue(sw.plan.AxisNamed(as.Axis), as.Settings, rec.ReadBack)
		rec.Values[as.Axis] = v
		for _, w := range warns {
			rec.Warnings = append(rec.Warnings, as.Axis+": "+w)
			fmt.Fprintf(sw.out, "WARNING: %s: %s\n", as.Axis, w)
		}
	}
	if len(rec.ReadBack) == 0 {
		rec.ReadBack = nil
	}
	if len(rec.Values) == 0 {
		rec.Values = nil
	}
}

// linkAdded is the median over the node pairs of the round trip the run's links added
// to the plain bridge (manifest links.impairment.rtt[].added_ms), nil without one.
func linkAdded(manifest string) *float64 {
	var m struct {
		Links struct {
			Impairment *struct {
				RTT []schema.LinkRTT `json:"rtt"`
			} `json:"impairment"`
		} `json:"links"`
	}
	b, err := os.ReadFile(manifest)
	if err != nil || json.Unmarshal(b, &m) != nil || m.Links.Impairment == nil {
		return nil
	}
	c, ok := schema.LinkCostMs(m.Links.Impairment.RTT)
	if !ok {
		return nil
	}
	return &c
}

// knobsReadBack adds to rb what the run's manifest says each node had in effect for the
// knobs (knobs.nodes[].effective, read back by package knob after setting them; for a
// variable with a session scope, knobs.nodes[].session: what a new session, as the
// workers' and the checker's, started with).
func knobsReadBack(manifest string, knobs []topology.KnobSetting, rb map[string]map[string]string) {
	var m struct {
		Knobs *schema.Knobs `json:"knobs"`
	}
	b, err := os.ReadFile(manifest)
	if err != nil || json.Unmarshal(b, &m) != nil || m.Knobs == nil {
		return
	}
	for _, v := range m.Knobs.Nodes {
		for _, k := range knobs {
			if v.Knob == k.Name {
				if rb[k.Name] == nil {
					rb[k.Name] = map[string]string{}
				}
				rb[k.Name][v.Node] = cmp.Or(v.Session, v.Effective)
			}
		}
	}
}

// cellExtra is a cell's manifest "extra": scenario, topology, cell index, axis values,
// scale, the baseline topology when the plan compares several (Plan.Baseline: the one
// comparison.md and sweep.json use, so `habench report` picks the same one) and, for a
// sweep, the cell's name.
func cellExtra(p *scenario.Plan, cell *scenario.Cell) map[string]any {
	e := map[string]any{"scenario": p.Scenario.Name, "topology": cell.Topology,
		"cell_index": cell.Index, "axes": cell.Values, "scale": p.Scale}
	if p.Compared() {
		e["baseline"], e["baseline_why"] = p.BaselineWhy()
	}
	if len(p.Axes) > 1 {
		// Reports name a sweep's runs "<topology> <cell>"; without a sweep, by topology.
		e["cell"] = cellName(p, cell)
	}
	return e
}

// cellName names a cell for reports (manifest extra "cell"): "c3 links=0.6ms threads=16",
// the axes other than the topology.
func cellName(p *scenario.Plan, c *scenario.Cell) string {
	parts := []string{fmt.Sprintf("c%d", c.Index)}
	for _, a := range p.Axes {
		if a.Kind != scenario.AxisTopology {
			parts = append(parts, a.Name+"="+c.Values[a.Name])
		}
	}
	return strings.Join(parts, " ")
}

func fillRecord(rec *schema.CellRecord, s *schema.Summary) {
	rec.TPS, rec.QPS, rec.Transactions, rec.IgnoredErrors = s.TPS, s.QPS, s.Transactions, s.IgnoredErrors
	if s.LatencyMs != nil {
		rec.LatencyMs = &schema.CellLatency{Avg: s.LatencyMs["avg"], P95: s.LatencyMs["p95"], P99: s.LatencyMs["p99"], Max: s.LatencyMs["max"]}
	}
	rec.MaxReplicaLagS, rec.LagUnknown = maxReplicaLag(s)
	rec.Warnings = append(rec.Warnings, degradedWarnings(s)...)
	if c := s.Checks; c != nil {
		rec.Anomalies, rec.CheckerValid, rec.CheckerOK, rec.CheckerError = &c.AnomalyCount, &c.Valid, &c.OK, c.Error
		if len(c.AnomalyTypes) > 0 {
			rec.AnomalyTypes = maps.Clone(c.AnomalyTypes)
		}
	}
	if checks, stale, ok := s.StaleReads(); ok {
		rec.ReadChecks, rec.StaleReads = &checks, &stale
	}
	rec.Faults = s.Faults
}

// maxReplicaLag is the largest heartbeat lag of any node (report.MaxLag over summary.json's
// nodes) and the nodes whose lag was unknown for a while: replicas, secondaries, the other
// Galera nodes, and the first writer too (its own lag is 0 while it writes the heartbeat;
// after a failover it is a stale old primary). nil without any lag sample, and for a single
// node (no replica: the console's n/a).
func maxReplicaLag(s *schema.Summary) (*float64, string) {
	if len(s.Nodes) < 2 {
		return nil, ""
	}
	return report.MaxLag(summaryLagFigures(s))
}

// readBackValue is an axis' value as read back, labelled like the axis' values: for each
// variable the nodes' common value (or "n1=a;n2=b" when they differ), one value when the
// axis' values set all their variables alike ("25000", when they also read back alike),
// else joined by "/" in the axis' order ("1/1"); with a warning per variable whose value
// differs from the request or between nodes.
func readBackValue(a *scenario.Axis, settings []scenario.Setting, rb map[string]map[string]string) (string, []string) {
	var parts, warns []string
	for _, st := range settings {
		byNode := rb[st.Name]
		var vals []string
		for _, n := range slices.Sorted(maps.Keys(byNode)) {
			if !slices.Contains(vals, byNode[n]) {
				vals = append(vals, byNode[n])
			}
		}
		v := ""
		switch len(vals) {
		case 0:
			v = "?"
			warns = append(warns, fmt.Sprintf("%s was not read back", st.Name))
		case 1:
			v = vals[0]
			if !SameValue(st.Value, v) {
				warns = append(warns, fmt.Sprintf("%s: requested %s, the servers report %s", st.Name, st.Value, v))
			}
		default:
			var nv []string
			for _, n := range slices.Sorted(maps.Keys(byNode)) {
				nv = append(nv, n+"="+byNode[n])
			}
			v = strings.Join(nv, ";")
			warns = append(warns, fmt.Sprintf("%s: requested %s, the nodes differ: %s", st.Name, st.Value, v))
		}
		parts = append(parts, v)
	}
	if a != nil && !a.Slash && len(parts) > 1 {
		same := true
		for _, p := range parts {
			same = same && p == parts[0]
		}
		if same {
			return parts[0], warns
		}
		var kv []string
		for i, st := range settings {
			kv = append(kv, st.Name+"="+parts[i])
		}
		return strings.Join(kv, ","), warns
	}
	return strings.Join(parts, "/"), warns
}
