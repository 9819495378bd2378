package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/links"
	"github.com/habench/habench/schema"
)

// TestLinkWatchRunOwnPartition: the standing record a scenario's partition fault applied
// and its heal cleared (as the watch saw them, on samples.csv's clock) is the faults', not
// links changed "from another command"; a `habench netem apply` of its own during the same
// run still is.
func TestLinkWatchRunOwnPartition(t *testing.T) {
	faults := []schema.RunFault{
		{AtS: 10.20, FaultRecord: schema.FaultRecord{Action: "partition", Node: "n3", Took: 0.35}},
		{AtS: 20.10, FaultRecord: schema.FaultRecord{Action: "heal", Node: "n3", Took: 0.05}},
	}
	own := []schema.LinkChange{
		{AtS: 10.48, Event: "applied", Request: "--partition n3", Backend: "userspace"},
		{AtS: 20.31, Event: "cleared", Request: "--partition n3", Backend: "userspace"},
	}
	if got := byOthers(own, faults); len(got) != 0 {
		t.Errorf("the run's own partition and heal kept as link changes: %+v", got)
	}
	if w := links.ChangeWarning(byOthers(own, faults)); w != "" {
		t.Errorf("warning for the run's own partition: %s", w)
	}
	other := schema.LinkChange{AtS: 30.0, Event: "applied", Request: "--delay 5ms", Backend: "kernel"}
	got := byOthers(append(own, other), faults)
	if len(got) != 1 || got[0] != other {
		t.Errorf("link changes %+v, want only the other command's %+v", got, other)
	}
	if w := links.ChangeWarning(got); !strings.Contains(w, "from another command") || !strings.Contains(w, "applied `--delay 5ms` at 30.0 s") || strings.Contains(w, "partition") {
		t.Errorf("warning %q", w)
	}
	// Without the faults (a `habench netem apply --partition n3` and clear), they are.
	if got := byOthers(own, nil); len(got) != 2 {
		t.Errorf("without faults: %+v", got)
	}
}

// TestFaultWarningOwnSchedule: the faults the run's own schedule injected are the
// scenario's in the WARNING, never "habench fault" (another command); one injected by
// another command during the run still is.
func TestFaultWarningOwnSchedule(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	faults := []schema.RunFault{
		{AtS: 10, FaultRecord: schema.FaultRecord{At: at, Action: "partition", Node: "n3"}},
		{AtS: 12, FaultRecord: schema.FaultRecord{At: at.Add(2 * time.Second), Action: "kill", Node: "n2"}},
		{AtS: 20, FaultRecord: schema.FaultRecord{At: at.Add(10 * time.Second), Action: "heal", Node: "n3"}},
	}
	own := []schema.FaultRecord{faults[0].FaultRecord, faults[2].FaultRecord}
	w := faultWarning(markScheduled(faults, own))
	want := "the scenario's faults were injected during the run: partition n3 at 10.0s, heal n3 at 20.0s; " +
		"and faults were injected during the run (habench fault): kill n2 at 12.0s; its numbers include them (samples.csv's clock)"
	if w != want {
		t.Errorf("warning\n%q\nwant\n%q", w, want)
	}
	if !faults[0].Scheduled || faults[1].Scheduled || !faults[2].Scheduled {
		t.Errorf("scheduled %v %v %v, want true false true", faults[0].Scheduled, faults[1].Scheduled, faults[2].Scheduled)
	}
}
