package experiment

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// slowInject is an injectFunc whose action takes d unless its context ends first (then it
// fails with the context's error, as a start waiting for its node would).
func slowInject(d time.Duration) injectFunc {
	return func(ctx context.Context, ev scenario.FaultEvent) (schema.FaultRecord, error) {
		rec := schema.FaultRecord{At: time.Now(), Action: ev.Action, Node: ev.Node}
		select {
		case <-time.After(d):
			return rec, nil
		case <-ctx.Done():
			return rec, ctx.Err()
		}
	}
}

// endDuring returns inject wrapped to close the returned channel, the workload's end, as
// its first action begins: that action is then in progress when the workload ends, however
// slowly the scheduler got to it.
func endDuring(inject injectFunc) (<-chan struct{}, injectFunc) {
	ended := make(chan struct{})
	var once sync.Once
	return ended, func(ctx context.Context, ev scenario.FaultEvent) (schema.FaultRecord, error) {
		once.Do(func() { close(ended) })
		return inject(ctx, ev)
	}
}

// endAfter closes the returned channel after d: the workload's end.
func endAfter(d time.Duration) <-chan struct{} {
	ended := make(chan struct{})
	time.AfterFunc(d, func() { close(ended) })
	return ended
}

func TestScheduleFaultsWaitsForActionInProgress(t *testing.T) {
	events := []scenario.FaultEvent{{At: schema.Duration(0), Action: "start", Node: "n3"}}
	var said []string
	ended, inject := endDuring(slowInject(400 * time.Millisecond))
	s := scheduleFaults(context.Background(), ended, inject, events, time.Now(), func(w string) { said = append(said, w) })
	if len(s.Done) != 1 {
		t.Fatalf("done = %v, want the start's record", s.Done)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "fault start n3 at 0s was still in progress when the workload ended: the run waited 0.") {
		t.Fatalf("warnings = %q, want the run to have waited for the start (not cancelled it)", s.Warnings)
	}
	if len(said) != 1 || said[0] != s.Warnings[0] {
		t.Errorf("said %q, want each warning said once", said)
	}
}

func TestScheduleFaultsCutsOffAfterGrace(t *testing.T) {
	defer func(g time.Duration) { faultGrace = g }(faultGrace)
	faultGrace = 100 * time.Millisecond
	events := []scenario.FaultEvent{{At: schema.Duration(0), Action: "start", Node: "n3"}}
	began := time.Now()
	ended, inject := endDuring(slowInject(time.Minute))
	s := scheduleFaults(context.Background(), ended, inject, events, time.Now(), func(string) {})
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("took %v, want the grace to bound the wait", took)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "fault start n3 at 0s was still in progress 100ms after the workload ended and was cut off: n3 may be left down") {
		t.Fatalf("warnings = %q, want the start cut off", s.Warnings)
	}
}

func TestScheduleFaultsNamesEventsNeverInjected(t *testing.T) {
	events := []scenario.FaultEvent{
		{At: schema.Duration(0), Action: "kill", Node: "n2"},
		{At: schema.Duration(time.Minute), Action: "start", Node: "n2"},
		{At: schema.Duration(2 * time.Minute), Action: "heal", Node: "n3"},
	}
	// The workload ends 1 s in: after the kill at 0 s (however slow the machine), long
	// before the events at 1 and 2 minutes.
	s := scheduleFaults(context.Background(), endAfter(time.Second), slowInject(0), events, time.Now(), func(string) {})
	if len(s.Done) != 1 || s.Done[0].Action != "kill" {
		t.Fatalf("done = %v, want the kill only", s.Done)
	}
	want := "the workload ended before 2 scheduled fault(s) were injected: start n2 at 1m0s, heal n3 at 2m0s"
	if len(s.Warnings) != 1 || s.Warnings[0] != want {
		t.Fatalf("warnings = %q, want %q", s.Warnings, want)
	}
}

func TestScheduleFaultsInterruptedSaysNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	events := []scenario.FaultEvent{
		{At: schema.Duration(0), Action: "start", Node: "n3"},
		{At: schema.Duration(time.Minute), Action: "heal", Node: "n3"},
	}
	s := scheduleFaults(ctx, make(chan struct{}), slowInject(time.Minute), events, time.Now(), func(string) {})
	if len(s.Warnings) != 0 || len(s.Done) != 1 {
		t.Fatalf("warnings %q, done %v: want no warning and the interrupted start's record", s.Warnings, s.Done)
	}
}

func TestScheduleFaultsFailureIsAWarning(t *testing.T) {
	fail := func(ctx context.Context, ev scenario.FaultEvent) (schema.FaultRecord, error) {
		return schema.FaultRecord{At: time.Now(), Action: ev.Action, Node: ev.Node}, context.DeadlineExceeded
	}
	events := []scenario.FaultEvent{{At: schema.Duration(0), Action: "promote", Node: "n2"}}
	s := scheduleFaults(context.Background(), make(chan struct{}), fail, events, time.Now(), func(string) {})
	if len(s.Warnings) != 1 || s.Warnings[0] != "fault promote n2 at 0s: context deadline exceeded" {
		t.Fatalf("warnings = %q", s.Warnings)
	}
}
