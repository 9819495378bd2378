package cluster

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// startChild starts a real process (sh -c script) for stopProcess, reaps it when it exits
// and kills it at the end of the test if it still runs.
func startChild(t *testing.T, script string) *Node {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	ticks, ok := procStartTicks(cmd.Process.Pid)
	if !ok {
		t.Fatalf("child %d not running", cmd.Process.Pid)
	}
	// Give sh the time to install its trap before any signal arrives.
	time.Sleep(300 * time.Millisecond)
	return &Node{Name: "n1", PID: cmd.Process.Pid, StartTicks: ticks}
}

// TestStopProcessEscalationIsAnError: a process that ignores SIGTERM is killed with SIGKILL
// after the grace, and stopProcess says so with a *StopEscalatedError naming the node and
// the grace (it used to return nil: a crash passed for a clean stop). A process that exits
// on SIGTERM is a clean stop (nil).
func TestStopProcessEscalationIsAnError(t *testing.T) {
	n := startChild(t, `trap "" TERM; while :; do sleep 1; done`)
	start := time.Now()
	err := stopProcess(n, 500*time.Millisecond)
	took := time.Since(start)
	var se *StopEscalatedError
	if !errors.As(err, &se) {
		t.Fatalf("stopProcess of a process ignoring SIGTERM: %v, want a *StopEscalatedError", err)
	}
	if se.Node != "n1" || se.Grace != 500*time.Millisecond || se.PID != n.PID {
		t.Errorf("escalation %+v, want node n1, pid %d, grace 500ms", *se, n.PID)
	}
	want := "node n1 did not shut down within 0.5 s of SIGTERM: killed with SIGKILL (a crash, not a clean stop)"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if ourProcess(n.PID, n.StartTicks) {
		t.Errorf("pid %d still runs after stopProcess", n.PID)
	}
	if took < 500*time.Millisecond || took > 10*time.Second {
		t.Errorf("stopProcess took %v, want the 0.5 s grace and then SIGKILL", took)
	}

	clean := startChild(t, `trap "exit 0" TERM; while :; do sleep 0.1; done`)
	if err := stopProcess(clean, 5*time.Second); err != nil {
		t.Errorf("stopProcess of a process that exits on SIGTERM: %v, want nil", err)
	}
	if ourProcess(clean.PID, clean.StartTicks) {
		t.Errorf("pid %d still runs after a clean stop", clean.PID)
	}
	// Nothing running: nothing to stop, no error.
	if err := stopProcess(&Node{Name: "n2", PID: n.PID, StartTicks: n.StartTicks}, time.Second); err != nil {
		t.Errorf("stopProcess of a gone process: %v", err)
	}
}
