package experiment

import (
	"encoding/json"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// partitionSamples are 20 ticks of a 3-node Galera cluster: n2 cannot be read in ticks
// 6-14 and comes back 9.5 s behind; n3 is outside the Primary component (not ready, its
// heartbeat unreadable) in ticks 6-14 and comes back nearly caught up (0.005 s), as a node
// that did IST before it accepted reads again.
func partitionSamples() []sampler.Sample {
	var ss []sampler.Sample
	for sec := 1; sec <= 20; sec++ {
		out := sec >= 6 && sec <= 14
		for _, n := range []string{"n1", "n2", "n3"} {
			ss = append(ss, smp(sec, n, "sampler_errors", 0))
			up := 1.0
			if out && n == "n2" {
				up = 0
			}
			ss = append(ss, smp(sec, n, sampler.MetricNodeUp, up))
		}
		ss = append(ss, smp(sec, "n1", "lag_s", 0), smp(sec, "n1", "galera_primary", 1), smp(sec, "n1", "galera_ready", 1))
		switch {
		case !out && sec != 15:
			ss = append(ss, smp(sec, "n2", "lag_s", 0.1), smp(sec, "n3", "lag_s", 0.02), smp(sec, "n3", "galera_primary", 1), smp(sec, "n3", "galera_ready", 1))
		case sec == 15:
			ss = append(ss, smp(sec, "n2", "lag_s", 9.5), smp(sec, "n3", "lag_s", 0.005), smp(sec, "n3", "galera_primary", 1), smp(sec, "n3", "galera_ready", 1))
		default: // n2 unreadable; n3 readable for status only, outside the Primary component
			ss = append(ss, smp(sec, "n3", "galera_primary", 0), smp(sec, "n3", "galera_ready", 0))
		}
	}
	return ss
}

func galeraNodes() []sampler.Node {
	return []sampler.Node{{Name: "n1", Role: topology.RoleNode}, {Name: "n2", Role: topology.RoleNode}, {Name: "n3", Role: topology.RoleNode}}
}

// TestLagUnknownWhileUnreadable: a node that could not be read for 9 s and came back
// 9.5 s behind has max lag 9.5 and 9 s unknown; a node outside the Primary component
// for 9 s that came back nearly caught up is "≥ 0.020 (unknown for 9 s)", never a clean
// 0.020 or 0.005.
func TestLagUnknownWhileUnreadable(t *testing.T) {
	wl, _ := workload.Lookup("oltp_read_write")
	b := &Bench{Workload: wl, Options: workload.DefaultOptions()}
	s := b.summary(nil, nil, galeraNodes(), partitionSamples(), nil)
	by := map[string]schema.NodeLag{}
	for _, n := range s.Nodes {
		by[n.Node] = n
	}
	if n := by["n2"]; n.LagMaxS == nil || *n.LagMaxS != 9.5 || n.LagUnknownS != 9 || n.Samples != 11 {
		t.Errorf("n2 (unreadable 9 s, back 9.5 s behind): %+v, want max 9.5, unknown 9 s, 11 lag samples", n)
	}
	if n := by["n3"]; n.LagMaxS == nil || *n.LagMaxS != 0.02 || n.LagUnknownS != 9 {
		t.Errorf("n3 (non-Primary 9 s): %+v, want max 0.02, unknown 9 s", n)
	}
	if n := by["n1"]; n.LagUnknownS != 0 {
		t.Errorf("n1 measured all along: unknown %v s", n.LagUnknownS)
	}
	md := Report(&schema.Manifest{Habench: map[string]string{"version": "t"}, Workload: schema.ManifestWorkload{Name: "oltp_read_write"}}, s)
	for _, w := range []string{"| n2 | node |  | ≥ 9.500 (unknown for 9 s) |", "| n3 | node |  | ≥ 0.020 (unknown for 9 s) |", "| n1 | node |  | 0.000 |"} {
		if !strings.Contains(md, w) {
			t.Errorf("node table lacks %q:\n%s", w, md)
		}
	}
	// Without a heartbeat (no lag_s at all) nothing is unknown: lag is n/a, not measured.
	var noHB []sampler.Sample
	for _, sm := range partitionSamples() {
		if sm.Metric != "lag_s" {
			noHB = append(noHB, sm)
		}
	}
	for node, st := range lagStats(noHB, 0) {
		if st.unknownS != 0 || st.max != nil {
			t.Errorf("%s without a heartbeat: %+v", node, st)
		}
	}
}

// TestLagTablesAgree: the node table, the Faults table's peak lag, the sweep cell, the
// comparison row and report.md (rendered by the report package from summary.json) show
// one computation: the same largest lag and the same unknown seconds, none a clean number.
func TestLagTablesAgree(t *testing.T) {
	wl, _ := workload.Lookup("oltp_read_write")
	b := &Bench{Workload: wl, Options: workload.DefaultOptions()}
	samples := partitionSamples()
	s := b.summary(nil, nil, galeraNodes(), samples, nil)
	s.Faults = faultSummaries([]schema.RunFault{{AtS: 5.5, FaultRecord: schema.FaultRecord{Action: "partition", Node: "n3"}}}, nil, samples, nil)
	const both = "n2 unknown for 9 s, n3 unknown for 9 s"

	nodeTable := Report(&schema.Manifest{Habench: map[string]string{"version": "t"}, Workload: schema.ManifestWorkload{Name: "oltp_read_write"}}, s)
	faults := report.FaultTable(s.Faults)
	var rec schema.CellRecord
	fillRecord(&rec, s)
	cmp := report.ComparisonTable([]schema.ComparisonRow{{Topology: "g", Kind: "galera", Summary: s, MaxLagS: rec.MaxReplicaLagS, LagUnknown: rec.LagUnknown}})
	for name, c := range map[string]struct{ out, want string }{
		"node table n2":   {nodeTable, "≥ 9.500 (unknown for 9 s)"},
		"faults peak lag": {faults, "≥ 9.50 (" + both + ")"},
		"comparison":      {cmp, "| ≥ 9.500 (" + both + ") |"},
	} {
		if !strings.Contains(c.out, c.want) {
			t.Errorf("%s lacks %q:\n%s", name, c.want, c.out)
		}
	}

	// report.md from the results files, by the report package.
	dir := t.TempDir()
	src, _ := filepath.Glob("../report/testdata/quick/*-qasync")
	if len(src) != 1 {
		t.Fatalf("testdata run: %v", src)
	}
	for _, f := range []string{"manifest.json", "intervals.csv", "samples.csv"} {
		data, err := os.ReadFile(filepath.Join(src[0], f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sj, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), sj, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := report.Render(res, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := string(out.Markdown)
	for _, w := range []string{"| ≥ 9.500 (unknown for 9 s) |", "| ≥ 0.020 (unknown for 9 s) |", "≥ 9.5 (" + both + ")"} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	if m, u := res.Runs[0].MaxLag(); m == nil || *m != 9.5 || u != both {
		t.Errorf("report's max lag %v %q, want 9.5 and %q", m, u, both)
	}
}

// TestLagUnknownTicks: unknown seconds follow the tick spacing (ticks dropped by an overrun
// count their whole gap), and a group member the majority does not see ONLINE counts as
// unknown even when its own (stale) heartbeat row was read.
func TestLagUnknownTicks(t *testing.T) {
	at := func(ms int, node, metric string, v float64) sampler.Sample {
		return sampler.Sample{Elapsed: time.Duration(ms) * time.Millisecond, Node: node, Metric: metric, Value: v}
	}
	var ss []sampler.Sample
	for _, ms := range []int{500, 1000, 1500, 3000, 3500} { // 1500 -> 3000: two ticks dropped
		ss = append(ss, at(ms, "n1", "sampler_errors", 0), at(ms, "n1", "lag_s", 0), at(ms, "n1", "gr_majority_state", 1))
		ss = append(ss, at(ms, "n2", "sampler_errors", 0), at(ms, "n2", "lag_s", 0.3))
		state := 1.0
		if ms == 1500 || ms == 3000 {
			state = 3 // UNREACHABLE for the majority, its own row still read
		}
		ss = append(ss, at(ms, "n2", "gr_majority_state", state))
	}
	st := lagStats(ss, 0)
	if got := st["n2"].unknownS; got != 2.0 {
		t.Errorf("n2 unknown %v s, want 2.0 (0.5 + the 1.5 s gap)", got)
	}
	if got := st["n1"].unknownS; got != 0 {
		t.Errorf("n1 unknown %v s, want 0", got)
	}
	if st := lagStats(ss, 2); st["n2"].unknownS != 1.5 || st["n2"].n != 2 {
		t.Errorf("from 2 s: %+v, want unknown 1.5 s and 2 lag samples", st["n2"])
	}
}
