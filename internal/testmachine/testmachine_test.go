package testmachine

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain runs a child process of this test binary when TESTMACHINE_HOLD says what it
// holds (the other tests start such children): it prints "held ..." once it holds it,
// then holds it until its standard input closes.
func TestMain(m *testing.M) {
	if d := os.Getenv("TESTMACHINE_DIR"); d != "" {
		Dir = d
	}
	if what := os.Getenv("TESTMACHINE_HOLD"); what != "" {
		h := &holder{}
		switch {
		case what == "share":
			Share(h)
			os.Stdout.WriteString("held share\n")
		case strings.HasPrefix(what, "name:"):
			os.Stdout.WriteString("held " + Name(h, strings.TrimPrefix(what, "name:")) + "\n")
		}
		bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder is the testing.TB of a child process: what Name and Share call, nothing else.
type holder struct{ testing.TB }

func (*holder) Name() string          { return "TestChild" }
func (*holder) Helper()               {}
func (*holder) Cleanup(func())        {}
func (*holder) Logf(string, ...any)   {}
func (*holder) Fatalf(string, ...any) { os.Exit(3) }
func (*holder) Fatal(...any)          { os.Exit(3) }

// child starts this binary holding what; it returns the first line it printed and a
// function that ends it (and waits for its end).
func child(t *testing.T, dir, what string) (line <-chan string, end func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TESTMACHINE_DIR="+dir, "TESTMACHINE_HOLD="+what)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "held ") {
				c <- strings.TrimPrefix(l, "held ")
			}
		}
	}()
	done := false
	end = func() {
		if !done {
			done = true
			in.Close()
			cmd.Wait()
		}
	}
	t.Cleanup(end)
	return c, end
}

func wait(t *testing.T, c <-chan string, d time.Duration) (string, bool) {
	t.Helper()
	select {
	case s := <-c:
		return s, true
	case <-time.After(d):
		return "", false
	}
}

// TestNamesUnique: names held by another process, by this process and by this test are
// never handed out again; a name is free once its holder has ended.
func TestNamesUnique(t *testing.T) {
	dir := t.TempDir()
	Dir = dir
	c, end := child(t, dir, "name:nu")
	other, ok := wait(t, c, 10*time.Second)
	if !ok {
		t.Fatal("the child process got no name")
	}
	seen := map[string]bool{other: true}
	var mine []string
	t.Run("in a subtest", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			n := Name(t, "nu")
			if seen[n] || len(n) != 5 || !strings.HasPrefix(n, "nu") {
				t.Fatalf("name %q: held already or malformed (held: %v)", n, seen)
			}
			seen[n] = true
			mine = append(mine, n)
		}
	})
	// The subtest ended: its names are free, the child's is not.
	if _, err := os.Stat(dir + "/names/" + mine[0]); err == nil {
		t.Errorf("%s still claimed after its test ended", mine[0])
	}
	if n := Name(t, "nu"); n == other {
		t.Errorf("got %q, held by the child process", n)
	}
	end()
	if !claim(t, "names", other) {
		t.Errorf("%s still held after the child process ended", other)
	}
	for _, bad := range []string{"", "Upper", "toolongprefix", "9x"} {
		ft := &fakeT{TB: t}
		func() {
			defer func() { recover() }()
			Name(ft, bad)
		}()
		if !ft.fatal {
			t.Errorf("prefix %q accepted", bad)
		}
	}
}

// TestAloneWaitsAndHolds: Alone waits for a test of another process that shares the
// machine to end, and a test that wants to share the machine while Alone holds it waits
// until it ends.
func TestAloneWaitsAndHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("Alone skips in -short mode")
	}
	dir := t.TempDir()
	Dir = dir
	c, end := child(t, dir, "share")
	if _, ok := wait(t, c, 10*time.Second); !ok {
		t.Fatal("the child process did not get the shared lock")
	}
	ended := make(chan time.Time, 1)
	go func() {
		time.Sleep(700 * time.Millisecond)
		end()
		ended <- time.Now()
	}()
	var second <-chan string
	top := t
	t.Run("alone", func(t *testing.T) {
		Alone(t)
		got := time.Now()
		// The goroutine notes the child's end just after the child released its lock:
		// Alone may return a moment before that note, never long before it.
		select {
		case e := <-ended:
			if got.Before(e.Add(-200 * time.Millisecond)) {
				t.Errorf("Alone returned %v before the sharing process ended", e.Sub(got))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Alone returned while another process shared the machine (it had not ended 5 s later)")
		}
		Share(t) // a harness in a test that holds the machine alone: no wait
		// Ended by the top-level test's cleanup: it can only end once Alone let it go.
		second, _ = child(top, dir, "share")
		if s, ok := wait(t, second, 700*time.Millisecond); ok {
			t.Errorf("a process shared the machine while Alone held it (%s)", s)
		}
	})
	if _, ok := wait(t, second, 10*time.Second); !ok {
		t.Error("the waiting process did not get the shared lock after Alone's test ended")
	}
	t.Run("alone after share", func(t *testing.T) {
		Share(t)
		ft := &fakeT{TB: t}
		func() {
			defer func() { recover() }()
			Alone(ft)
		}()
		if !ft.fatal {
			t.Error("Alone in a test that shares the machine did not fail")
		}
	})
}

// fakeT records Fatalf instead of ending the test (it panics to stop the caller, which
// the caller's recover ends).
type fakeT struct {
	testing.TB
	fatal bool
}

func (f *fakeT) Fatalf(string, ...any) { f.fatal = true; panic("fatal") }
func (f *fakeT) Fatal(...any)          { f.fatal = true; panic("fatal") }
func (f *fakeT) Helper()               {}

// TestSharedSlots: with MaxSharedEnv at 2, a third test waits until one of the first two
// ends, then takes the freed slot; a value that is not a positive number is an error
// naming it.
func TestSharedSlots(t *testing.T) {
	old := Dir
	Dir = t.TempDir()
	defer func() { Dir = old }()
	t.Setenv(MaxSharedEnv, "2")
	// Each holder stands for a test: its slot is freed when its cleanups run. (Subtests run
	// from goroutines would do, but go test -json loses the end of such a subtest.)
	a, b, c := &slotHolder{TB: t}, &slotHolder{TB: t}, &slotHolder{TB: t}
	defer a.end()
	defer b.end()
	defer c.end()
	if !takeSlot(a) || !takeSlot(b) {
		t.Fatal("takeSlot without a slot under a limit")
	}
	took := make(chan bool, 1)
	go func() { took <- takeSlot(c) }()
	select {
	case <-took:
		t.Fatal("a third slot while two are held")
	case <-time.After(500 * time.Millisecond):
	}
	a.end()
	select {
	case ok := <-took:
		if !ok {
			t.Fatal("takeSlot without a slot under a limit")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5 s after a slot was freed")
	}
	for v, want := range map[string]int{"": 0, "3": 3, "0": -1, "-2": -1, "six": -1} {
		n, err := slotLimit(v)
		if (want < 0) != (err != nil) || (want >= 0 && n != want) || (err != nil && !strings.Contains(err.Error(), MaxSharedEnv+`="`+v+`"`)) {
			t.Errorf("slotLimit(%q) = %d, %v; want %d (-1: an error naming the value)", v, n, err, want)
		}
	}
}

// slotHolder is a test for takeSlot: its cleanups run when end is called, not when the
// real test (TB) ends. end may be called more than once.
type slotHolder struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (h *slotHolder) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}

func (h *slotHolder) end() {
	h.mu.Lock()
	fs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
