package experiment

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
)

// durabilityFailoverRun reads testdata/durability-failover-async: intervals.csv, samples.csv
// and manifest.json's faults and intervals_offset_s of a real async run of
// scenarios/durability-failover.yaml (n1 killed at 3.03 s, n2 promoted at 3.54 s, the
// workers following the writer: reconnected within a second, so no outage >= 1 s).
func durabilityFailoverRun(t *testing.T) ([]schema.RunFault, []sampler.Sample, []FaultInterval) {
	t.Helper()
	dir := filepath.Join("testdata", "durability-failover-async")
	var man struct {
		Offset float64           `json:"intervals_offset_s"`
		Faults []schema.RunFault `json:"faults"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	rows := func(name string) (map[string]int, [][]string) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		all, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, c := range all[0] {
			col[c] = i
		}
		return col, all[1:]
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	col, ivRows := rows("intervals.csv")
	var ivs []FaultInterval
	prev := 0.0
	for _, r := range ivRows {
		end := num(r[col["elapsed_s"]])
		ivs = append(ivs, FaultInterval{EndS: end + man.Offset, LengthS: end - prev, TPS: num(r[col["tps"]]),
			Transactions: int64(num(r[col["transactions"]])), Errors: int64(num(r[col["errors"]])), Reconnects: int64(num(r[col["reconnects"]]))})
		prev = end
	}
	col, sRows := rows("samples.csv")
	var ss []sampler.Sample
	for _, r := range sRows {
		ss = append(ss, sampler.Sample{Elapsed: time.Duration(num(r[col["elapsed_s"]]) * float64(time.Second)), Node: r[col["node"]],
			Metric: r[col["metric"]], Value: num(r[col["value"]])})
	}
	return man.Faults, ss, ivs
}

// TestFaultRecoveryFollowingWriter: the workers followed the writer to n2 within a second
// (no outage >= 1 s), yet the interval at 4 s fell from 2431 to 918 TPS with 59 errors/s
// and 4 reconnects: recovery is not 0 ("did not notice") but until the interval after it.
func TestFaultRecoveryFollowingWriter(t *testing.T) {
	faults, ss, ivs := durabilityFailoverRun(t)
	fs := faultSummaries(faults, nil, ss, ivs)
	if len(fs) != 2 {
		t.Fatalf("faults %+v, want 2", fs)
	}
	kill, promote := fs[0], fs[1]
	// Intervals on samples.csv's clock: (2.05, 3.05] 13 errors, (3.05, 4.05] 918 TPS, 59
	// errors, 4 reconnects, (4.05, 5.05] 1902 TPS (over half the 2524 median before the kill).
	if kill.RecoveryS == nil || *kill.RecoveryS < 0.9 || *kill.RecoveryS > 1.1 {
		t.Errorf("kill: recovery %v, want about 1.01 s (to 4.05 s, the end of the disturbed interval)", fmtOpt(kill.RecoveryS, "%.3f"))
	}
	if kill.Errors != 72 || kill.Reconnects != 4 || kill.MinTPS == nil || *kill.MinTPS != 918.047 {
		t.Errorf("kill: errors %d, reconnects %d, min TPS %v; want 72, 4, 918.047", kill.Errors, kill.Reconnects, fmtOpt(kill.MinTPS, "%.3f"))
	}
	if promote.RecoveryS == nil || *promote.RecoveryS < 0.4 || *promote.RecoveryS > 0.6 {
		t.Errorf("promote: recovery %v, want about 0.51 s", fmtOpt(promote.RecoveryS, "%.3f"))
	}
	tb := report.FaultTable(fs)
	if !strings.Contains(tb, "| 3.03 | kill | n1 | 1.01 | - | 72 | 4 | 918 |") {
		t.Errorf("fault table:\n%s", tb)
	}
}

// TestFaultRecoveryUndisturbed: a fault the workload did not notice is 0; one whose
// disturbance lasted to the end of the run is still out (nil).
func TestFaultRecoveryUndisturbed(t *testing.T) {
	ivs := []FaultInterval{
		{EndS: 1, LengthS: 1, TPS: 100, Transactions: 100, Errors: 1},
		{EndS: 2, LengthS: 1, TPS: 110, Transactions: 110},
		{EndS: 3, LengthS: 1, TPS: 90, Transactions: 90, Errors: 1}, // routine errors: as before
		{EndS: 4, LengthS: 1, TPS: 100, Transactions: 100},
	}
	fs := faultSummaries([]schema.RunFault{{AtS: 2.5, FaultRecord: schema.FaultRecord{Action: "restart", Node: "n3"}}}, nil, nil, ivs)
	if r := fs[0].RecoveryS; r == nil || *r != 0 || fs[0].Errors != 0 {
		t.Errorf("undisturbed: %+v", fs[0])
	}
	ivs[3].TPS, ivs[3].Transactions = 10, 10
	fs = faultSummaries([]schema.RunFault{{AtS: 2.5, FaultRecord: schema.FaultRecord{Action: "kill", Node: "n1"}}}, nil, nil, ivs)
	if fs[0].RecoveryS != nil {
		t.Errorf("disturbed to the end: recovery %v, want nil", *fs[0].RecoveryS)
	}
}
