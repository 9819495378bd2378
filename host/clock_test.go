package host_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/habench/habench/internal/testmachine"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testhost"
)

// fakeClock is this machine's clock in TestMeasureClockArithmetic: it moves only when
// the fake host's read says so.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestMeasureClockArithmetic: a host whose clock is 250 ms ahead, read with round trips
// of different lengths and asymmetries: the shortest round is kept, its offset is the
// host's reading minus the round's midpoint and its uncertainty half the round trip, and
// the true offset lies within offset ± uncertainty for every round.
func TestMeasureClockArithmetic(t *testing.T) {
	const skew = 250 * time.Millisecond
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	// before, after: how long the request takes to reach the host, and the reply to come back.
	rounds := [][2]time.Duration{{9 * time.Millisecond, 1 * time.Millisecond}, {3 * time.Millisecond, 1 * time.Millisecond},
		{20 * time.Millisecond, 20 * time.Millisecond}, {1 * time.Millisecond, 5 * time.Millisecond}}
	i := 0
	read := func(context.Context) (time.Time, error) {
		r := rounds[i]
		i++
		clk.t = clk.t.Add(r[0])
		remote := clk.t.Add(skew)
		clk.t = clk.t.Add(r[1])
		return remote, nil
	}
	off, unc, err := host.MeasureClockForTest(context.Background(), "fake", len(rounds), clk.now, read)
	if err != nil {
		t.Fatal(err)
	}
	// The round {3ms, 1ms}: rtt 4 ms, midpoint 2 ms after t0, host read 3 ms after t0.
	if want := skew + time.Millisecond; off != want || unc != 2*time.Millisecond {
		t.Errorf("offset %v ± %v, want %v ± 2ms (the shortest round)", off, unc, want)
	}
	if d := (off - skew).Abs(); d > unc {
		t.Errorf("true offset %v outside %v ± %v", skew, off, unc)
	}
	// A host clock behind ours: negative offset.
	clk.t, i = time.Unix(1_700_000_000, 0), 0
	rounds = [][2]time.Duration{{2 * time.Millisecond, 2 * time.Millisecond}}
	behind := func(ctx context.Context) (time.Time, error) {
		r, _ := read(ctx)
		return r.Add(-2 * skew), nil
	}
	if off, unc, _ := host.MeasureClockForTest(context.Background(), "fake", 1, clk.now, behind); off != -skew || unc != 2*time.Millisecond {
		t.Errorf("host behind: %v ± %v, want %v ± 2ms", off, unc, -skew)
	}
	// A read that fails: its error, as it is.
	boom := errors.New("fake: cannot connect")
	if _, _, err := host.MeasureClockForTest(context.Background(), "fake", 3, clk.now, func(context.Context) (time.Time, error) { return time.Time{}, boom }); !errors.Is(err, boom) {
		t.Errorf("failing read: %v", err)
	}
}

// skewedHost is a Host whose `date +%s%N` prints this machine's clock plus skew, after a
// delay (or out, when set, instead).
type skewedHost struct {
	skew, delay time.Duration
	out         string
	calls       int
}

func (h *skewedHost) Name() string { return "fake db9" }
func (h *skewedHost) Run(_ context.Context, argv ...string) ([]byte, error) {
	h.calls++
	if strings.Join(argv, " ") != "date +%s%N" {
		return nil, fmt.Errorf("unexpected command %q", argv)
	}
	if h.out != "" {
		return []byte(h.out), nil
	}
	time.Sleep(h.delay)
	return []byte(fmt.Sprintf("%d\n", time.Now().Add(h.skew).UnixNano())), nil
}
func (h *skewedHost) ReadFile(context.Context, string) ([]byte, error) { return nil, errors.New("no") }
func (h *skewedHost) Close() error                                     { return nil }

// TestClockOffsetFakeHost: ClockOffset over a Host's Run, with this machine's real clock:
// a host 3 s behind reads -3 s within the uncertainty; rounds as asked; a date without %N
// is an error naming the host; Local is 0 ± 0 without running anything.
func TestClockOffsetFakeHost(t *testing.T) {
	ctx := context.Background()
	h := &skewedHost{skew: -3 * time.Second, delay: time.Millisecond}
	off, unc, err := host.ClockOffset(ctx, h, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fake host 3 s behind: %v ± %v", off, unc)
	if (off-h.skew).Abs() > unc || unc < 500*time.Microsecond || unc > 50*time.Millisecond || h.calls != 5 {
		t.Errorf("offset %v ± %v after %d reads, want -3s within the uncertainty (about 0.5 ms), 5 reads", off, unc, h.calls)
	}
	h = &skewedHost{out: "1700000000N\n"}
	if _, _, err := host.ClockOffset(ctx, h, 0); err == nil || !strings.Contains(err.Error(), "fake db9") || !strings.Contains(err.Error(), "GNU date") {
		t.Errorf("date without nanoseconds: %v", err)
	}
	if off, unc, err := host.ClockOffset(ctx, host.Local{Netns: "nonexistent"}, 8); off != 0 || unc != 0 || err != nil {
		t.Errorf("Local: %v ± %v, %v", off, unc, err)
	}
	for _, bad := range []string{"", "abc", "17", "-1700000000000000000"} {
		if _, err := host.ParseDateForTest("h", bad); err == nil {
			t.Errorf("parseDate(%q): no error", bad)
		}
	}
}

// TestClockOffsetSSH: a lab host (a namespace: the same kernel clock as this machine) reached
// over SSH reads 0 within its uncertainty, and the uncertainty is small (one session, not an
// ssh client per round); an unreachable host is an error naming it.
func TestClockOffsetSSH(t *testing.T) {
	testmachine.Alone(t) // it measures clock offsets over ssh: nothing else may load the machine
	lab := testhost.New(t, 1, testhost.Options{SSH: true})
	t.Cleanup(host.CloseAll)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := &host.SSH{Dest: lab.Hosts[0].Name, Config: lab.SSHConfig}
	off, unc, err := host.ClockOffset(ctx, h, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: clock offset %v ± %v", h.Name(), off, unc)
	if off.Abs() > unc {
		t.Errorf("offset %v ± %v: a namespace shares this machine's clock, want 0 within the uncertainty", off, unc)
	}
	if unc > 20*time.Millisecond {
		t.Errorf("uncertainty %v: the clock session is not used (a new ssh client per round)", unc)
	}
	gone := &host.SSH{Dest: lab.Addr(99), User: "root", Identity: lab.Key, ConnectTimeout: 2 * time.Second,
		Options: []string{"UserKnownHostsFile=" + lab.KnownHosts}}
	if _, _, err := host.ClockOffset(ctx, gone, 8); err == nil || !strings.Contains(err.Error(), lab.Addr(99)) {
		t.Errorf("unreachable host: %v", err)
	}
}

// namedSkewedHost is a skewedHost with a name of its own.
type namedSkewedHost struct {
	skewedHost
	name string
}

func (h *namedSkewedHost) Name() string { return h.name }

// TestClockOffsets: each distinct host measured once, results in the hosts' order (a nil
// host and Local zero), and a failing host's error naming it.
func TestClockOffsets(t *testing.T) {
	a := &namedSkewedHost{skewedHost{skew: 2 * time.Second, delay: time.Millisecond}, "a"}
	b := &namedSkewedHost{skewedHost{skew: -time.Second, delay: time.Millisecond}, "b"}
	bad := &namedSkewedHost{skewedHost{out: "x"}, "bad"}
	cs, err := host.ClockOffsets(context.Background(), []host.Host{a, b, nil, a, host.Local{}})
	if err != nil {
		t.Fatal(err)
	}
	if a.calls != host.DefaultClockRounds || b.calls != host.DefaultClockRounds {
		t.Errorf("reads: a %d, b %d, want %d each (a twice in the list, measured once)", a.calls, b.calls, host.DefaultClockRounds)
	}
	for i, want := range []time.Duration{2 * time.Second, -time.Second, 0, 2 * time.Second, 0} {
		if (cs[i].Offset - want).Abs() > cs[i].Uncertainty+time.Millisecond {
			t.Errorf("host %d: %v ± %v, want %v", i, cs[i].Offset, cs[i].Uncertainty, want)
		}
	}
	if _, err := host.ClockOffsets(context.Background(), []host.Host{a, bad, bad}); err == nil || !strings.Contains(err.Error(), "bad") || strings.Count(err.Error(), "bad:") != 1 {
		t.Errorf("a failing host: %v", err)
	}
}
