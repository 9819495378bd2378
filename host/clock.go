package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultClockRounds is how many reads of a host's clock ClockOffset makes when asked for
// rounds <= 0.
const DefaultClockRounds = 8

// maxClockRounds bounds rounds (each is at least one round trip to the host).
const maxClockRounds = 100

// ClockOffset measures host h's wall clock against this machine's, Cristian's way: each of
// rounds rounds (DefaultClockRounds when rounds <= 0, at most 100) reads this machine's
// clock (t0), the host's (`date +%s%N`), and this machine's again (t1); the round's offset
// is host - (t0+t1)/2 and its uncertainty (t1-t0)/2, and the round with the shortest round
// trip is kept. offset is positive when the host's clock is ahead of this machine's; the
// true offset lies within offset ± uncertainty (the host read its clock between t0 and t1).
//
// A Local host (any namespace) shares this machine's clock: 0 ± 0, nothing is run. An
// *SSH host is read through one session kept open for the rounds on its master connection
// (bash's $EPOCHREALTIME, or a `date` per round: a round trip of about a millisecond on a
// LAN, not the 50-150 ms of a new ssh client), falling back to Run when that session cannot
// start. Other hosts are
// read with Run. Errors name the host: unreachable (the host's own error, e.g. a
// *ConnError), or a `date` without nanoseconds (%N is GNU date's).
func ClockOffset(ctx context.Context, h Host, rounds int) (offset, uncertainty time.Duration, err error) {
	switch h.(type) {
	case Local, *Local:
		return 0, 0, nil
	}
	if rounds <= 0 {
		rounds = DefaultClockRounds
	}
	rounds = min(rounds, maxClockRounds)
	read := func(ctx context.Context) (time.Time, error) { return runDate(ctx, h) }
	if s, ok := h.(*SSH); ok {
		if err := s.Connect(ctx); err != nil {
			return 0, 0, err
		}
		if cs, err := s.startClockSession(); err == nil {
			defer cs.close()
			if _, err := cs.read(ctx); err == nil { // the session works (and is warm)
				read = cs.read
			}
		}
	}
	return measureClock(ctx, h.Name(), rounds, time.Now, read)
}

// Clock is a host's clock offset to this machine's, as ClockOffset measures it.
type Clock struct {
	Offset, Uncertainty time.Duration
}

// ClockOffsets measures the clock of every host of hosts (ClockOffset, DefaultClockRounds),
// each distinct host (by Name) once and all at once, and returns their Clocks in hosts'
// order (zero for a nil host): what a run records per node and hands the samplers
// (sampler.Node.ClockOffset). The error joins every host's that failed, each naming its host.
func ClockOffsets(ctx context.Context, hosts []Host) ([]Clock, error) {
	type res struct {
		c   Clock
		err error
	}
	byName := map[string]*res{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, h := range hosts {
		if h == nil || byName[h.Name()] != nil {
			continue
		}
		r := &res{}
		byName[h.Name()] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			off, unc, err := ClockOffset(ctx, h, DefaultClockRounds)
			mu.Lock()
			r.c, r.err = Clock{off, unc}, err
			mu.Unlock()
		}()
	}
	wg.Wait()
	out := make([]Clock, len(hosts))
	var errs []error
	seen := map[string]bool{}
	for i, h := range hosts {
		if h == nil {
			continue
		}
		r := byName[h.Name()]
		out[i] = r.c
		if r.err != nil && !seen[h.Name()] {
			errs = append(errs, r.err)
		}
		seen[h.Name()] = true
	}
	return out, errors.Join(errs...)
}

// measureClock runs the rounds with local clock now and host clock read (see ClockOffset).
func measureClock(ctx context.Context, name string, rounds int, now func() time.Time, read func(context.Context) (time.Time, error)) (offset, uncertainty time.Duration, err error) {
	best := time.Duration(-1)
	for range rounds {
		t0 := now()
		remote, err := read(ctx)
		t1 := now()
		if err != nil {
			return 0, 0, err
		}
		rtt := t1.Sub(t0)
		if rtt < 0 {
			return 0, 0, fmt.Errorf("%s: clock: this machine's clock went back %v during a read", name, -rtt)
		}
		if best < 0 || rtt < best {
			best = rtt
			offset = remote.Sub(t0.Add(rtt / 2))
			uncertainty = rtt / 2
		}
	}
	return offset, uncertainty, nil
}

// runDate reads h's wall clock with `date +%s%N` over Run.
func runDate(ctx context.Context, h Host) (time.Time, error) {
	out, err := h.Run(ctx, "date", "+%s%N")
	if err != nil {
		return time.Time{}, err
	}
	return parseDate(h.Name(), string(out))
}

// parseDate parses `date +%s%N` output (nanoseconds since the epoch). Pure.
func parseDate(name, out string) (time.Time, error) {
	s := strings.TrimSpace(out)
	ns, err := strconv.ParseInt(s, 10, 64)
	if err != nil || len(s) < 10 || strings.Trim(s, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("%s: date +%%s%%N printed %q: want nanoseconds since the epoch (GNU date)", name, s)
	}
	return time.Unix(0, ns), nil
}

// clockSessionCommand is the remote command line of a clock session: bash (5 and later)
// answers each line with $EPOCHREALTIME (microseconds, no process started: the round trip is
// the network's and ssh's only), a shell without it with `date +%s%N`.
const clockSessionCommand = `command -v bash >/dev/null 2>&1 && exec bash -c 'while read -r _; do t=$EPOCHREALTIME; if [ -n "$t" ]; then echo "${t//[.,]/}000"; else date +%s%N; fi; done'; exec sh -c 'while read -r _; do date +%s%N; done'`

// clockSession is a shell on an SSH host that prints its clock (nanoseconds since the
// epoch, clockSessionCommand) for each line it reads.
type clockSession struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done bool
}

// startClockSession opens the session on the master connection (Connect first).
func (s *SSH) startClockSession() (*clockSession, error) {
	cmd, in, out, err := s.startSession(clockSessionCommand)
	if err != nil {
		return nil, err
	}
	return &clockSession{name: s.Name(), cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// read asks for one reading of the host's clock. After an error (or ctx's end) the
// session is closed and every later read fails.
func (c *clockSession) read(ctx context.Context) (time.Time, error) {
	type reply struct {
		line string
		err  error
	}
	ch := make(chan reply, 1)
	go func() {
		if _, err := io.WriteString(c.in, "\n"); err != nil {
			ch <- reply{err: err}
			return
		}
		line, err := c.out.ReadString('\n')
		ch <- reply{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			c.close()
			if errors.Is(r.err, io.EOF) {
				r.err = errors.New("session ended")
			}
			return time.Time{}, fmt.Errorf("%s: clock: %w", c.name, r.err)
		}
		return parseDate(c.name, r.line)
	case <-ctx.Done():
		c.close()
		<-ch
		return time.Time{}, fmt.Errorf("%s: clock: %w", c.name, ctx.Err())
	}
}

// close ends the session (idempotent).
func (c *clockSession) close() {
	if c.done {
		return
	}
	c.done = true
	c.in.Close()
	c.cmd.Process.Kill()
	c.cmd.Wait()
}
