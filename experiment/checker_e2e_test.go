package experiment_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"olympos.io/encoding/edn"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/history"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestCheckerBesideOLTP: a register checker at REPEATABLE READ beside oltp_read_write on
// a single MariaDB sandbox: the run's summary.json has the verdict (lost updates found,
// named in report.md's Anomalies section), history.jsonl has one line per operation
// counted, and history.edn parses as EDN with an :invoke and a completion per operation.
// Then the bank beside the same workload: wrong totals with plain reads, none with FOR
// UPDATE.
func TestCheckerBesideOLTP(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "ck"), topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_read_write")
	o := smallOptions(2, 4*time.Second)
	o.Rate = behaviourRate
	tg := target(c)
	if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(), Stdout: &stdout,
		Checker: &scenario.CheckerSpec{Workload: "register", Threads: 4, Keys: 2, Isolation: "REPEATABLE-READ"}}
	out, err := b.Run(ctx)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stdout.String())
	}
	cs := out.Summary.Checks
	if cs == nil {
		t.Fatal("summary has no checks")
	}
	t.Logf("%s", report.AnomaliesLine(cs))
	if cs.OK < 50 || cs.LostUpdates == 0 || cs.Valid || len(cs.Anomalies) == 0 || len(cs.Anomalies[0].Ops) < 2 ||
		cs.AnomalyTypes["lost-update"] != cs.AnomalyCount {
		t.Fatalf("checks %+v: want lost updates found at REPEATABLE READ, named by their operations", cs)
	}
	if !strings.Contains(stdout.String(), "Anomalies: ") {
		t.Errorf("stdout lacks the Anomalies line:\n%s", stdout.String())
	}
	md, err := os.ReadFile(filepath.Join(out.Dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Anomalies") || !strings.Contains(string(md), cs.Anomalies[0].Explanation) {
		t.Errorf("report.md lacks the Anomalies section with its first explanation")
	}
	var sum schema.Summary
	if b, err := os.ReadFile(filepath.Join(out.Dir, schema.SummaryFile)); err != nil || json.Unmarshal(b, &sum) != nil || sum.Checks == nil || sum.Checks.LostUpdates != cs.LostUpdates {
		t.Errorf("summary.json's checks differ from the run's (%v)", err)
	}
	lines := readLines(t, filepath.Join(out.Dir, schema.HistoryFile))
	if len(lines) != cs.Ops {
		t.Fatalf("history.jsonl has %d lines, summary counts %d operations", len(lines), cs.Ops)
	}
	var op history.Op
	if err := json.Unmarshal([]byte(lines[0]), &op); err != nil || op.Node != c.Writer().Name || len(op.Value) != 2 {
		t.Errorf("history.jsonl's first line %s: %v", lines[0], err)
	}
	evs := readLines(t, filepath.Join(out.Dir, schema.HistoryEDNFile))
	if len(evs) != 2*cs.Ops {
		t.Fatalf("history.edn has %d events, want %d", len(evs), 2*cs.Ops)
	}
	for _, l := range evs {
		var m map[edn.Keyword]any
		if err := edn.Unmarshal([]byte(l), &m); err != nil || m[edn.Keyword("f")] != edn.Keyword("txn") {
			t.Fatalf("history.edn line %q: %v", l, err)
		}
	}

	// The bank beside the same workload: plain reads at REPEATABLE READ change the
	// total; with FOR UPDATE every read of all accounts sums to it.
	for _, locking := range []string{"", "for-update"} {
		stdout.Reset()
		b.Checker = &scenario.CheckerSpec{Workload: "bank", Threads: 4, Keys: 4, Isolation: "REPEATABLE-READ", Locking: locking}
		out, err := b.Run(ctx)
		if err != nil {
			t.Fatalf("bank run: %v\n%s", err, stdout.String())
		}
		cs := out.Summary.Checks
		t.Logf("bank, locking %q: %s", locking, report.AnomaliesLine(cs))
		if cs.OK < 50 || cs.Keys != 4 || cs.Workload != "bank" {
			t.Fatalf("bank checks %+v: want at least 50 committed transactions on 4 accounts", cs)
		}
		if bad := cs.AnomalyTypes["wrong-total"] > 0; bad != (locking == "") || cs.Valid != (locking != "") {
			t.Fatalf("bank, locking %q: checks %+v: want wrong totals only with plain reads", locking, cs)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
