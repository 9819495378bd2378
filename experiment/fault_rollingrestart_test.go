package experiment

import (
	"github.com/habench/habench/schema"
	"testing"
	"time"

	"github.com/habench/habench/scenario"
	"github.com/habench/habench/workload"
)

// TestRollingRestartRegistered: rolling-restart is in the registry with its timeout
// parameter (a bad value is refused naming it), logs its steps (Steps), and a run marks
// the steps made while a scheduled rolling restart ran as scheduled, not those of another
// command or after it.
func TestRollingRestartRegistered(t *testing.T) {
	a := FaultActionOf("rolling-restart")
	if a == nil || !a.Steps || a.Past != "rolling-restarted" {
		t.Fatalf("rolling-restart: %+v, want a registered action with steps", a)
	}
	if _, err := scenario.ParseFaultArgs("rolling-restart", []string{"timeout=2m"}); err != nil {
		t.Errorf("timeout=2m: %v", err)
	}
	if _, err := scenario.ParseFaultArgs("rolling-restart", []string{"timeout=soon"}); err == nil || err.Error() != `timeout "soon": want a duration > 0, e.g. 2s or 500ms` {
		t.Errorf("timeout=soon: %v, want the field named", err)
	}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	own := []schema.FaultRecord{{At: t0, Took: 60, Action: "rolling-restart", Node: "n1"}}
	step := func(s float64, action, node, of string) schema.RunFault {
		return schema.RunFault{AtS: s, FaultRecord: schema.FaultRecord{At: t0.Add(time.Duration(s * float64(time.Second))), Action: action, Node: node, Of: of}}
	}
	fs := markScheduled([]schema.RunFault{
		step(0.01, "restart", "n2", "rolling-restart"),
		step(45, "promote", "n2", "rolling-restart"),
		step(50, "kill", "n3", ""),                   // habench fault kill meanwhile
		step(70, "restart", "n3", "rolling-restart"), // after the scheduled one ended
	}, own)
	for i, want := range []bool{true, true, false, false} {
		if fs[i].Scheduled != want {
			t.Errorf("%s %s at %.2f s: scheduled %v, want %v", fs[i].Action, fs[i].Node, fs[i].AtS, fs[i].Scheduled, want)
		}
	}
}

// TestRollingRestartSwitchoverTakesTheWriterChange: in a rolling restart the change of
// writer is the switchover's (the promote step), not the first restart's.
func TestRollingRestartSwitchoverTakesTheWriterChange(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []schema.RunFault{
		{AtS: 3, FaultRecord: schema.FaultRecord{At: at(3), Action: "restart", Node: "n2", Of: "rolling-restart"}},
		{AtS: 24, FaultRecord: schema.FaultRecord{At: at(24), Action: "restart", Node: "n3", Of: "rolling-restart"}},
		{AtS: 44, FaultRecord: schema.FaultRecord{At: at(44), Action: "promote", Node: "n2", Of: "rolling-restart"}},
		{AtS: 44.5, FaultRecord: schema.FaultRecord{At: at(44.5), Action: "restart", Node: "n1", Of: "rolling-restart"}},
	}
	fs := make([]schema.FaultSummary, len(faults))
	seen := []writerSeen{{At: at(0.5), Node: "n1"}, {At: at(44.6), Node: "n2"}}
	moves := []workload.WriterMove{{From: "n1", To: "n2", At: at(44.5), FirstCommit: at(44.7), Workers: 2}}
	setFailover(fs, faults, seen, moves)
	if fs[0].NewWriter != "" || fs[2].NewWriter != "n2" || fs[2].NewWriterS == nil || fs[2].ClientWriterS == nil || *fs[2].ClientWriterS > 0.71 {
		t.Errorf("faults %+v, want the writer change to n2 on the promote step (3rd), 0.7 s after it", fs)
	}
}
