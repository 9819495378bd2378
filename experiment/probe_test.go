package experiment

import (
	"context"
	"database/sql"
	"github.com/habench/habench/schema"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/history"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestProbeCount: the probe's figures from a hand-built probe history (seq 1, 2, 4
// acknowledged, 3 failed, 5 and 6 of unknown outcome; the read after the run saw 1, 3, 5):
// 2 of 3 acknowledged commits lost, 2 unacknowledged rows present; before the final read,
// only the commits by outcome and an error.
func TestProbeCount(t *testing.T) {
	var ops []history.Op
	for i, o := range []history.Outcome{history.OK, history.OK, history.Fail, history.OK, history.Unknown, history.Unknown} {
		ops = append(ops, history.Op{Index: i, Start: int64(i * 10), End: int64(i*10 + 5), Outcome: o, Value: []history.Mop{history.Append(probeKey, int64(i+1))}})
	}
	var p probe
	var s schema.ProbeSummary
	if err := p.count(&s, ops); err == nil || s.Acknowledged != 3 || s.Failed != 1 || s.Unknown != 2 || s.LostAcknowledged != 0 {
		t.Errorf("without the final read: %+v, %v; want 3, 1, 2 and an error", s, err)
	}
	ops = append(ops, history.Op{Index: 6, Start: 100, End: 110, Outcome: history.OK, Value: []history.Mop{history.RL(probeKey, 1, 3, 5)}})
	if err := p.count(&s, ops); err != nil {
		t.Fatal(err)
	}
	if s.Acknowledged != 3 || s.Failed != 1 || s.Unknown != 2 || s.LostAcknowledged != 2 || !slices.Equal(s.Lost, []int64{2, 4}) || s.UnacknowledgedPresent != 2 {
		t.Errorf("probe summary %+v: want 3 acknowledged, 1 failed, 2 unknown, lost 2 and 4, 2 unacknowledged present", s)
	}
	if w := probeWarning(&s); w == "" {
		t.Errorf("no warning for lost acknowledged commits")
	}
}

// TestProbeRefusedIsFailed (issue 31): a commit whose connect is refused (the writer
// down: nothing was sent) is a failed commit of the probe's history, not one of unknown
// outcome (unknown means it may have committed). A real refusal: a loopback port nothing
// listens on.
func TestProbeRefusedIsFailed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // every connect to it is refused now
	db, err := sql.Open("mysql", "u:p@tcp("+addr+")/?timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := &probe{schema: "sbtest", h: history.New()}
	for seq := int64(1); seq <= 3; seq++ {
		p.commit(context.Background(), db, "n1", seq)
	}
	ops := p.h.Ops()
	if len(ops) != 3 {
		t.Fatalf("%d operations recorded, want 3", len(ops))
	}
	for _, op := range ops {
		if op.Outcome != history.Fail || !strings.Contains(op.Error, "connection refused") {
			t.Errorf("refused connect: outcome %v, error %q; want failed, naming the refusal", op.Outcome, op.Error)
		}
	}
	var s schema.ProbeSummary
	p.count(&s, ops)
	if s.Failed != 3 || s.Unknown != 0 {
		t.Errorf("probe summary %+v: want 3 failed, 0 unknown", s)
	}
}

// TestProbeVia: the probe commits through the proxy's write endpoint when the workload
// goes through the proxy, on the writer it resolves otherwise.
func TestProbeVia(t *testing.T) {
	ep := workload.Endpoint{Name: topology.ProxyName, Host: "127.0.0.1", Port: 3306}
	b := &Bench{Via: scenario.ViaProxy, Target: workload.Target{Endpoints: []workload.Endpoint{ep}}}
	if got := probeVia(b); got == nil || *got != ep {
		t.Errorf("through the proxy: %v, want %v", got, ep)
	}
	b.Via = ""
	if got := probeVia(b); got != nil {
		t.Errorf("direct: %v, want none", got)
	}
	// Through the proxy a commit is four round trips (docs/faults.md): the INSERT's
	// arguments interpolated, not a prepared statement (PREPARE, EXECUTE, CLOSE).
	cfg := viaConfig(ep, workload.Target{User: "u", Password: "p"}, "sbtest")
	if !cfg.InterpolateParams || cfg.Addr != "127.0.0.1:3306" || cfg.DBName != "sbtest" || cfg.DialFunc == nil {
		t.Errorf("connection through the proxy: interpolate %v, %s, database %q, dialer set %v; want interpolated, 127.0.0.1:3306, sbtest, a dialer",
			cfg.InterpolateParams, cfg.Addr, cfg.DBName, cfg.DialFunc != nil)
	}
}
