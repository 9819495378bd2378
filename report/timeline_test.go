package report

import (
	"strings"
	"testing"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

func f64(v float64) *float64 { return &v }

// A writer kill through a proxy: every layer's time in one row; the same fault direct
// shows the proxy's columns empty; a run without a layer to show has no table.
func TestTimelineTable(t *testing.T) {
	proxied := schema.FaultSummary{AtS: 10, Action: "kill", Node: "n1", ViewChangeS: f64(5), NewWriterS: f64(5.5), NewWriter: "n2",
		ClientDownS: f64(0.05), RecoveryS: f64(6.4),
		Proxy: &schema.FaultProxy{Server: "n1", DownS: f64(0.6), SessionsAtDown: 4, LeftS: f64(0.6), NewServer: "n2", NewServerS: f64(6.1)}}
	direct := schema.FaultSummary{AtS: 10, Action: "kill", Node: "n1", ViewChangeS: f64(5), ClientDownS: f64(0.01), RecoveryS: f64(5.9)}
	got := TimelineTable([]schema.FaultSummary{proxied, direct})
	for _, want := range []string{
		"| 10.00 | kill | n1 | 5.0 | 5.5 (n2) | 0.60 (n1, 4 sessions) | 0.60 | 6.10 (n2) | 0.05 | 6.40 | 6.35 |",
		"| 10.00 | kill | n1 | 5.0 | - | - | - | - | 0.01 | 5.90 | 5.89 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
	if got := TimelineTable([]schema.FaultSummary{{AtS: 3, Action: "knob"}}); got != "" {
		t.Errorf("a fault without a layer to show: %q, want no table", got)
	}
	sw := &schema.SweepFile{Axes: []schema.SweepAxis{{Name: "topology", Kind: schema.AxisTopology}, {Name: "via", Kind: schema.AxisVia}},
		Cells: []schema.CellRecord{{Index: 1, Topology: "gal", Axes: map[string]string{"via": "direct"}, Faults: []schema.FaultSummary{direct}},
			{Index: 2, Topology: "gal", Axes: map[string]string{"via": "proxy"}, Via: "proxy", Faults: []schema.FaultSummary{proxied}}}}
	md := SweepTimelineTable(sw)
	for _, want := range []string{"| cell | topology | via | fault |", "| 1 | gal | direct | kill n1 at 10.0 s | 5.0 |", "| 2 | gal | proxy | kill n1 at 10.0 s | 5.0 | 5.5 (n2) | 0.60 (n1, 4 sessions) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("sweep timeline lacks %q:\n%s", want, md)
		}
	}
	sw.Cells[1].Dir = "c2"
	sw.Cells = append(sw.Cells, sw.Cells[1])
	sw.Cells[2].Index, sw.Cells[2].Dir = 3, "c3"
	sw.Summary = []*stats.Cell{{Topology: "gal", Group: "via=proxy", Runs: []string{"/r/c2", "/r/c3"}}}
	if md := SweepTimelineTable(sw); !strings.Contains(md, "| gal | via=proxy | fault 1 (kill n1 in the first run) | 0.60 [0.60-0.60] (n 2) | 6.10 [6.10-6.10] (n 2) | 6.35 [6.35-6.35] (n 2) |") {
		t.Errorf("sweep timeline lacks the point's means over its runs:\n%s", md)
	}
	ps := ProxySection(&schema.ProxySummary{Type: "haproxy", CheckIntervalMs: 200, Fall: 3, Rise: 2, Polls: 300, Events: 12, WriteServers: []string{"n1", "n2"}, NoWriterS: 5.5, CPUCores: f64(0.012)})
	if !strings.Contains(ps, "servers in turn: n1 → n2; without one for 5.5 s") || !strings.Contains(ps, "0.012 cores") {
		t.Errorf("proxy section: %s", ps)
	}
}

// The probe's stale commits through the proxy: a column of their own (0 checked, ⚠ with
// the nodes), "-" for a fault not counted, and its note; none without a count.
func TestTimelineStale(t *testing.T) {
	zero, three := int64(0), int64(3)
	checked := schema.FaultSummary{AtS: 10, Action: "kill", Node: "n1", ClientDownS: f64(0.05), RecoveryS: f64(6.4),
		Proxy: &schema.FaultProxy{Server: "n1", StaleCommits: &zero}}
	split := schema.FaultSummary{AtS: 20, Action: "promote", Node: "n2", ClientDownS: f64(0.05), RecoveryS: f64(1),
		Proxy: &schema.FaultProxy{Server: "n1", StaleCommits: &three, StaleOn: []string{"n1"}}}
	direct := schema.FaultSummary{AtS: 30, Action: "kill", Node: "n2", ClientDownS: f64(0.01), RecoveryS: f64(5.9)}
	got := TimelineTable([]schema.FaultSummary{checked, split, direct})
	for _, want := range []string{"| client down s | stale commits |", "| 6.35 | 0 |\n", "| ⚠ 3 (n1) |\n", "| 5.89 | - |\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
	if n := TimelineNoteFor([]schema.FaultSummary{checked}); !strings.Contains(n, StaleNote) {
		t.Errorf("note %q lacks the stale commits'", n)
	}
	checked.Proxy.StaleCommits = nil
	if got := TimelineTable([]schema.FaultSummary{checked, direct}); strings.Contains(got, StaleHead) || strings.Contains(TimelineNoteFor([]schema.FaultSummary{checked}), StaleNote) {
		t.Errorf("no count, yet a stale commits column or note:\n%s", got)
	}
	sw := &schema.SweepFile{Axes: []schema.SweepAxis{{Name: "topology", Kind: schema.AxisTopology}},
		Cells: []schema.CellRecord{{Index: 1, Topology: "as", Via: "proxy", Faults: []schema.FaultSummary{split}}}}
	if md := SweepTimelineTable(sw); !strings.Contains(md, "| stale commits |") || !strings.Contains(md, "| ⚠ 3 (n1) |\n") {
		t.Errorf("sweep timeline lacks the stale commits:\n%s", md)
	}
}
