package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/topology"
)

// fakeStarts stands for servers whose starts end when the test says: launch records the
// order, and a node's start ends with the error sent on its channel.
type fakeStarts struct {
	order []string
	end   map[string]chan error
}

func newFakeStarts(nodes ...string) *fakeStarts {
	f := &fakeStarts{end: map[string]chan error{}}
	for _, n := range nodes {
		f.end[n] = make(chan error, 1)
	}
	return f
}

func (f *fakeStarts) launched(slots int, save func() error) *launched {
	return &launched{
		ctx: context.Background(), slots: slots, ended: make(chan struct{}, len(f.end)+1),
		launch: func(n *Node) (func(context.Context) error, error) {
			f.order = append(f.order, n.Name)
			ch := f.end[n.Name]
			return func(context.Context) error { return <-ch }, nil
		},
		save: save, log: slog.New(slog.NewTextHandler(io.Discard, nil)), start: time.Now(),
	}
}

// TestLaunchedStaggersStarts: with 2 slots the third server is launched only once one of
// the first two is up, a step's wait for it launches it, and a step waits for its own
// node only.
func TestLaunchedStaggersStarts(t *testing.T) {
	f := newFakeStarts("n1", "n2", "n3")
	saves := 0
	l := f.launched(2, func() error { saves++; return nil })
	for _, n := range []string{"n1", "n2", "n3"} {
		if err := l.add(&Node{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(f.order, ","); got != "n1,n2" || saves != 2 {
		t.Fatalf("launched %q with %d saves before a slot was free, want n1,n2 and 2", got, saves)
	}
	f.end["n1"] <- nil
	if err := l.await("n1"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.order, ","); got != "n1,n2,n3" || saves != 3 {
		t.Fatalf("after n1 came up launched %q (%d saves), want n1,n2,n3 (3)", got, saves)
	}
	done := make(chan error, 1)
	go func() { done <- l.await("n3") }()
	select {
	case err := <-done:
		t.Fatalf("await(n3) returned %v before n3 was up", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.end["n3"] <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.end["n2"] <- nil
	if err := l.all(); err != nil {
		t.Fatal(err)
	}
	if err := l.await("n9"); err != nil { // started by a plan step: nothing to wait for
		t.Fatal(err)
	}
}

// TestLaunchedFailureStopsLaunches: a server that does not come up keeps the queued ones
// from being launched; the error is said once when every server refused the same option,
// and a state file that cannot be written is an error.
func TestLaunchedFailureStopsLaunches(t *testing.T) {
	f := newFakeStarts("n1", "n2", "n3")
	l := f.launched(2, func() error { return nil })
	for _, n := range []string{"n1", "n2", "n3"} {
		if err := l.add(&Node{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	bad := &topology.FieldError{Field: "option", Value: "no_such_var", Reason: "unknown variable"}
	f.end["n1"] <- bad
	f.end["n2"] <- bad
	<-l.ended // both starts have ended (failed) before a step waits
	<-l.ended
	errc := make(chan error, 1)
	go func() { errc <- l.await("n2") }()
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatalf("await did not return within 5 s (launched %v: a queued server was launched after a failure)", f.order)
	}
	var fe *topology.FieldError
	if !errors.As(err, &fe) || strings.Count(err.Error(), "no_such_var") != 1 {
		t.Fatalf("await = %v, want the option's FieldError once", err)
	}
	if got := strings.Join(f.order, ","); got != "n1,n2" {
		t.Errorf("launched %q after a failed start, want n1,n2", got)
	}

	f = newFakeStarts("n1")
	l = f.launched(1, func() error { return errors.New("state.json: disk full") })
	if err := l.add(&Node{Name: "n1"}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("add with a failing save = %v, want its error", err)
	}
	f.end["n1"] <- nil
	if err := l.all(); err != nil {
		t.Errorf("all = %v", err)
	}
}
