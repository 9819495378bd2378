package main

import (
	"context"
	"encoding/json"
	"github.com/habench/habench/schema"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// hangRun is what TestPartitionPrimaryHang reads of one run's results.
type hangRun struct {
	code             int
	stdout           string
	partitionAt      time.Time // the cut in place: the partition action's end
	warnings         []string
	samplesStarted   time.Time
	intervalsOffsetS float64
	sum              schema.Summary
}

// runPartitioningWriter runs oltp_write_only on the group (extra: the writer flags) and
// partitions node three intervals into the run; healAfter says when to heal, given the run's
// output so far (the heal also comes at cleanup).
func runPartitioningWriter(t *testing.T, state, name, node string, healAfter func(out string) bool, extra ...string) hangRun {
	t.Helper()
	results := t.TempDir()
	args := append([]string{"sysbench", "oltp_write_only", "run", "--cluster", name, "--threads", "2", "--rate", "100", "--report-interval", "1",
		"--tables", "1", "--table-size", "1000", "--results", results, "--catch-up-timeout", "30s",
		"--set", "group_replication_member_expel_timeout=0"}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, out, errOut := startHabench(t, ctx, state, args...)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { habench(t, state, "fault", "heal", node, "--cluster", name) })
	for !strings.Contains(out.String(), "[ 3s ]") {
		select {
		case err := <-done:
			t.Fatalf("run ended before its third interval: %v %s %s", err, out.String(), errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	var hr hangRun
	hr.partitionAt = time.Now()
	if r := habench(t, state, "fault", "partition", node, "--cluster", name); r.code != 0 {
		t.Fatalf("fault partition %s: %d %s", node, r.code, r.stderr)
	}
	var err error
	for healed := false; ; {
		if !healed && healAfter(out.String()) {
			habench(t, state, "fault", "heal", node, "--cluster", name)
			healed = true
		}
		select {
		case err = <-done:
		case <-time.After(200 * time.Millisecond):
			continue
		}
		break
	}
	hr.stdout = out.String()
	if ee, ok := err.(*exec.ExitError); ok {
		hr.code = ee.ExitCode()
	}
	t.Logf("run %v: exit %d\n%s\n%s", extra, hr.code, hr.stdout, errOut.String())
	dirs, _ := filepath.Glob(filepath.Join(results, "*", "summary.json"))
	if len(dirs) != 1 {
		t.Fatalf("results: %v", dirs)
	}
	var man struct {
		SamplesStarted   time.Time         `json:"samples_started"`
		IntervalsOffsetS float64           `json:"intervals_offset_s"`
		Warnings         []string          `json:"warnings"`
		Faults           []schema.RunFault `json:"faults"`
	}
	sb, _ := os.ReadFile(dirs[0])
	mb, _ := os.ReadFile(filepath.Join(filepath.Dir(dirs[0]), "manifest.json"))
	if err := json.Unmarshal(sb, &hr.sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if err := json.Unmarshal(mb, &man); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	hr.warnings, hr.samplesStarted, hr.intervalsOffsetS = man.Warnings, man.SamplesStarted, man.IntervalsOffsetS
	// The cut was in place by the end of the partition action (its record's at + took_s):
	// the command's own start-up and link probes come before it, and take seconds on a
	// loaded machine.
	for _, f := range man.Faults {
		if end := f.At.Add(time.Duration(f.Took * float64(time.Second))); f.Action == "partition" && end.After(hr.partitionAt) {
			hr.partitionAt = end
		}
	}
	return hr
}

// partitionFault is the run's partition fault (summary.json faults).
func (hr hangRun) partitionFault(t *testing.T) schema.FaultSummary {
	t.Helper()
	for _, f := range hr.sum.Faults {
		if f.Action == "partition" {
			return f
		}
	}
	t.Fatalf("no partition among the faults %+v", hr.sum.Faults)
	return schema.FaultSummary{}
}

// TestPartitionPrimaryHang partitions the PRIMARY of a 3-member single-primary MySQL group
// under load (expel timeout 0): cut off in a minority, the old primary's commits neither
// succeed nor fail. With writer auto the workers give their hung transactions up (unknown
// outcome) and commit on the new primary within 10 s of its election, which the fault's
// record has (new_writer_s, client_writer_s). With writer fixed on the new primary,
// partitioned in turn, the workers hang to the end: the hang is in the latency max, and
// WARNINGs name the waits and the new writer they did not follow.
func TestPartitionPrimaryHang(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	name := testenv.Name(t, "hgp")
	partitionCluster(t, state, name, topology.Group, topology.MySQL)

	// auto: heal at 20 s.
	t0 := time.Now()
	auto := runPartitioningWriter(t, state, name, "n1", func(out string) bool {
		return strings.Contains(out, "[ 20s ]")
	}, "--time", "22", "--writer", "auto")
	f := auto.partitionFault(t)
	s := auto.sum
	t.Logf("auto: fault %+v (new writer %s after %v s, workers there after %v s); moves %+v; unknown %d; waits %d %+v; max %.2f ms; took %v",
		f, f.NewWriter, deref(f.NewWriterS), deref(f.ClientWriterS), s.WriterMoves, s.UnknownOutcome, s.Waits, s.LongestWait, s.LatencyMs["max"], time.Since(t0))
	if f.NewWriterS == nil || f.ClientWriterS == nil || (f.NewWriter != "n2" && f.NewWriter != "n3") {
		t.Fatalf("partition fault %+v: want the new primary and the workers' first commit there", f)
	}
	if d := *f.ClientWriterS - *f.NewWriterS; d > 10 {
		t.Errorf("the workers committed on %s %.1f s after its election, want within 10 s", f.NewWriter, d)
	}
	if s.UnknownOutcome < 1 || len(s.WriterMoves) == 0 || s.WriterMoves[0].From != "n1" || s.WriterMoves[0].To != f.NewWriter || s.WriterMoves[0].Abandoned < 1 {
		t.Errorf("unknown %d, moves %+v: want the hung transactions abandoned on n1 and a move to %s", s.UnknownOutcome, s.WriterMoves, f.NewWriter)
	}
	// The workers sat on n1 from the partition until they moved: the max says so.
	if hung := s.WriterMoves[0].AtS - (auto.partitionAt.Sub(auto.samplesStarted).Seconds() - auto.intervalsOffsetS); s.LatencyMs["max"] < (hung-1)*1000 {
		t.Errorf("latency max %.2f ms, but the workers hung %.1f s on n1", s.LatencyMs["max"], hung)
	}
	if !strings.Contains(auto.stdout, "Lower bounds (habench)") {
		t.Errorf("no lower-bounds line in the summary:\n%s", auto.stdout)
	}

	// The old primary rejoins after the heal (auto-rejoin) before the group can elect again.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(habench(t, state, "status", name).stdout, "3/3 members ONLINE") {
		if time.Now().After(deadline) {
			t.Fatalf("n1 did not rejoin: %s", habench(t, state, "status", name).stdout)
		}
		time.Sleep(time.Second)
	}

	// fixed: the workers stay on the primary, which hangs to the end of the run.
	p := f.NewWriter
	fixed := runPartitioningWriter(t, state, name, p, func(out string) bool {
		return strings.Contains(out, "SQL statistics:")
	}, "--time", "12", "--writer", "fixed", "--nodes", p)
	ff := fixed.partitionFault(t)
	s = fixed.sum
	hung := 12 + 5 - (fixed.partitionAt.Sub(fixed.samplesStarted).Seconds() - fixed.intervalsOffsetS)
	t.Logf("fixed: exit %d, fault %+v; waits %d %+v; max %.2f ms (hung ~%.1f s); warnings %q", fixed.code, ff, s.Waits, s.LongestWait, s.LatencyMs["max"], hung, fixed.warnings)
	if fixed.code != 1 {
		t.Errorf("fixed: exit %d, want 1 (the writer lost)", fixed.code)
	}
	if s.Waits < 1 || s.LongestWait == nil || s.LongestWait.Abandoned || s.LatencyMs["max"] < (hung-1)*1000 {
		t.Errorf("fixed: waits %d %+v, max %.2f ms: want the transactions in flight at the end, the max at least the %.1f s hang", s.Waits, s.LongestWait, s.LatencyMs["max"], hung)
	}
	if ff.NewWriterS == nil || ff.ClientWriterS != nil {
		t.Errorf("fixed: fault %+v: want the new writer's time and no client time", ff)
	}
	for _, want := range []string{"while the workers stayed on " + p, "in flight at the end of the run"} {
		if !slices.ContainsFunc(fixed.warnings, func(w string) bool { return strings.Contains(w, want) }) || !strings.Contains(fixed.stdout, want) {
			t.Errorf("fixed: no WARNING %q: %q", want, fixed.warnings)
		}
	}
	t.Logf("took %v", time.Since(t0))
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
