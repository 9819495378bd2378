package experiment

import (
	"bytes"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/report"
	"github.com/habench/habench/stats"
)

// durabilityRows are the durability-failover scenario's two rows as a first-time user
// ran them (one repeat each, a CPU-saturated host, a probe writer): async lost 550 of
// 1424 acknowledged commits, semi-sync none; and a Galera row on another server.
func durabilityRows() []schema.ComparisonRow {
	f := func(v float64) *float64 { return &v }
	host := []schema.HostSummary{{Host: "local", CPUBusyMean: f(0.97), CPUBusyMax: f(0.99), CPUSaturated: true, SaturatedShare: 0.88}}
	quiet := []schema.HostSummary{{Host: "local", CPUBusyMean: f(0.3), CPUBusyMax: f(0.5)}}
	one := func(v float64) stats.Sample { return stats.Of([]float64{v}) }
	cell := func(topo string, tps float64, base bool) *stats.Cell {
		c := &stats.Cell{Topology: topo, TPS: one(tps), QPS: one(tps * 6), AvgMs: one(2), P95Ms: one(4), P99Ms: one(8), IsBase: base}
		ch := stats.Compare(one(tps), one(2040.85))
		if base {
			ch.Verdict = stats.Reference
		}
		c.VsBase, c.LatVsBase, c.P95VsBase = &ch, &ch, &ch
		return c
	}
	return []schema.ComparisonRow{
		{Topology: "dfasync", Kind: "async", Flavor: "mariadb", Version: "10.11.19", Stats: cell("dfasync", 2040.85, true),
			Summary: &schema.Summary{TPS: 2040.85, LatencyMs: map[string]float64{"avg": 2}, Hosts: host,
				Probe: &schema.ProbeSummary{Acknowledged: 1424, LostAcknowledged: 550, CheckedOn: "n2"}}},
		{Topology: "dfsemi", Kind: "semisync", Flavor: "mariadb", Version: "10.11.19", Stats: cell("dfsemi", 846.31, false),
			Summary: &schema.Summary{TPS: 846.31, LatencyMs: map[string]float64{"avg": 4.7}, Hosts: host,
				Probe: &schema.ProbeSummary{Acknowledged: 869, CheckedOn: "n2"}}},
		{Topology: "dfgalera", Kind: "galera", Flavor: "mysql", Version: "9.7.4", Stats: cell("dfgalera", 1000, false),
			Summary: &schema.Summary{TPS: 1000, LatencyMs: map[string]float64{"avg": 3}, Hosts: quiet}},
	}
}

// TestComparisonLostAckedAndCaveats: the comparison (comparison.md and the console)
// has a "lost acked commits" column when a row had a probe writer ("550 of 1424"), marks
// ratios of CPU-bound cells and of cells without a CI with ⚠ and says why under the
// table, and names the rows on another server than the baseline's.
func TestComparisonLostAckedAndCaveats(t *testing.T) {
	rows := durabilityRows()
	md := report.ComparisonTable(rows)
	var con bytes.Buffer
	report.PrintComparison(&con, rows)
	for name, out := range map[string]string{"comparison.md": md, "console": con.String()} {
		for _, want := range []string{"550 of 1424", "0 of 869", "41.5% ⚠", report.Warn + " compares CPU-bound cells: the ratio measures the host, not the topology",
			"no confidence interval (one repeat)", "Other server than the baseline dfasync (MariaDB 10.11.19): dfgalera (MySQL 9.7.4)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "(reference) "+report.Warn) || strings.Contains(out, "100.0% "+report.Warn) {
			t.Errorf("%s marks the baseline's own ratio:\n%s", name, out)
		}
	}
	if !strings.Contains(md, "| lost acked commits |") || !strings.Contains(md, "| dfgalera | galera | mysql | 9.7.4 |") || !strings.Contains(md, "| n/a | local 30% / 50% |") {
		t.Errorf("comparison.md:\n%s", md)
	}
	// Without a probe writer, no column.
	for i := range rows {
		rows[i].Summary.Probe = nil
	}
	if md := report.ComparisonTable(rows); strings.Contains(md, "lost acked") {
		t.Errorf("a column for lost commits without a probe writer:\n%s", md)
	}
}

// TestConsoleComparisonFootnotes: a point's notes (same-path control cells, a single
// node's reused cells) are footnotes under the console table, not text in its topology
// column, which keeps the table narrow.
func TestConsoleComparisonFootnotes(t *testing.T) {
	rows := durabilityRows()
	added := 0.015
	rows[1].LinksControl, rows[1].LinkAddedMs = "same path: the userspace link at zero delay", &added
	var con bytes.Buffer
	report.PrintComparison(&con, rows)
	out := con.String()
	if !strings.Contains(out, "dfsemi (a)") || !strings.Contains(out, "(a) same path: the userspace link at zero delay; the link's own cost (the round trip it added to the plain bridge): dfsemi +0.015 ms.") {
		t.Errorf("no footnote:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "dfsemi (a)") && len([]rune(l)) > 130 {
			t.Errorf("table line of %d columns: %s", len([]rune(l)), l)
		}
	}
}

// TestLockSweepRemoved: sweep.lock exists only while a run holds it; a second run is
// refused meanwhile.
func TestLockSweepRemoved(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockSweep(dir); err == nil {
		t.Error("a second lock on the same directory")
	}
	unlock()
	if _, err := os.Stat(filepath.Join(dir, "sweep.lock")); !os.IsNotExist(err) {
		t.Errorf("sweep.lock left after unlock: %v", err)
	}
	unlock, err = lockSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
