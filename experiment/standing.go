package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"golang.org/x/sys/unix"
)

// StandingLinksFile is the record, in the cluster's directory, of the impairments applied
// with `habench netem apply`. They outlive that command: kernel qdiscs stay in the nodes'
// namespaces, and the userspace link runs in a detached link process (`habench netem
// serve`, found by its cluster.LinkStateArg argument even when its PID was never recorded).
const StandingLinksFile = "links.json"

// StandingLinks is the content of StandingLinksFile.
type StandingLinks struct {
	Cluster string        `json:"cluster"`
	Request netem.Request `json:"request"`
	Backend string        `json:"backend"` // netem.BackendKernel or netem.BackendUserspace
	// PID and StartTicks identify the link process (userspace backend; 0 while starting).
	PID        int         `json:"pid,omitempty"`
	StartTicks uint64      `json:"start_ticks,omitempty"`
	Applied    time.Time   `json:"applied"`
	Report     *LinkReport `json:"report,omitempty"` // nil until measured
}

// Alive reports whether the impairments are in effect as far as processes go: always for
// the kernel backend (qdiscs need no process), and for the userspace one while the
// recorded link process runs.
func (s *StandingLinks) Alive() bool {
	if s.Backend == netem.BackendKernel {
		return true
	}
	return s.PID > 0 && cluster.ProcessAlive(s.PID, s.StartTicks)
}

func standingPath(c *cluster.Cluster) string { return filepath.Join(c.Dir(), StandingLinksFile) }

// ReadStanding returns cluster c's standing links, nil (and no error) if there are none.
// Errors: an unreadable or corrupt record.
func ReadStanding(c *cluster.Cluster) (*StandingLinks, error) {
	if c.Dir() == "" {
		return nil, nil
	}
	b, err := os.ReadFile(standingPath(c))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s StandingLinks
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", standingPath(c), err)
	}
	return &s, nil
}

func writeStanding(c *cluster.Cluster, s *StandingLinks) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := standingPath(c) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, standingPath(c))
}

// lockStanding serialises apply and clear on one cluster (flock on links.lock).
func lockStanding(c *cluster.Cluster) (func(), error) {
	f, err := os.OpenFile(filepath.Join(c.Dir(), "links.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}

// LinkProcess is how ApplyStanding starts the detached link process: Exe with Args, to
// which it appends cluster.LinkStateArg + the record's path. The process must run
// ServeStanding.
type LinkProcess struct {
	Exe  string
	Args []string
}

// ApplyStanding replaces cluster c's impairments with req until ClearStanding (or
// destroy): it clears what was there, measures the plain round trips, applies req (kernel
// netem where the kernel has it, else the userspace link in a detached process started
// with lp), measures again and records everything in StandingLinksFile. Errors: req does
// not build over the cluster's nodes (*netem.RequestError), the cluster is on loopback,
// the link cannot start, ctx ends. On any error nothing is left applied.
func ApplyStanding(ctx context.Context, c *cluster.Cluster, req netem.Request, lp LinkProcess) (st *StandingLinks, err error) {
	eps, err := LinkEndpoints(c)
	if err != nil {
		return nil, err
	}
	spec, err := req.Build(nodeNames(c))
	if err != nil {
		return nil, err
	}
	unlock, err := lockStanding(c)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := clearStanding(c, eps); err != nil {
		return nil, fmt.Errorf("clear the previous impairments: %w", err)
	}
	// What is left now is not ours to replace: a run with --links in progress.
	for _, e := range eps {
		if found, err := netem.Residue(e); err != nil || len(found) > 0 {
			return nil, fmt.Errorf("node %s already has link impairments (%s%v): is a run with --links going on? Wait for it to end", e.Name, strings.Join(found, ", "), errOrEmpty(err))
		}
	}
	base, err := netem.MeasureRTT(ctx, eps, nil, 10, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("measure links before applying: %w", err)
	}
	st = &StandingLinks{Cluster: c.Name, Request: req, Applied: time.Now().UTC()}
	defer func() {
		if err != nil {
			if cerr := clearStanding(c, eps); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up: %w", cerr))
			}
		}
	}()
	if netem.KernelAvailable() == nil {
		st.Backend = netem.BackendKernel
		// Recorded first: a crash between here and the end still leaves clear a record.
		if err := writeStanding(c, st); err != nil {
			return nil, err
		}
		if _, err := netem.NewKernel(eps, spec); err != nil {
			return nil, err
		}
	} else {
		st.Backend = netem.BackendUserspace
		if err := writeStanding(c, st); err != nil {
			return nil, err
		}
		if err := startLinkProcess(ctx, c, st, lp); err != nil {
			return nil, err
		}
		if err := writeStanding(c, st); err != nil {
			return nil, err
		}
	}
	rtts, err := netem.MeasureRTT(ctx, eps, spec, 20, 3*time.Second)
	if err != nil {
		return nil, fmt.Errorf("measure after apply (%s): %w", st.Backend, err)
	}
	if !st.Alive() {
		return nil, fmt.Errorf("link process %d exited: %s", st.PID, lastLines(filepath.Join(c.Dir(), "links.log"), 3))
	}
	st.Report = linkReport(st.Backend, spec, base, rtts)
	st.Report.Request = req.String()
	st.Report.AppliedBy = "netem apply"
	st.Report.Applied = st.Applied
	if err := writeStanding(c, st); err != nil {
		return nil, err
	}
	return st, nil
}

// startLinkProcess starts the detached link process and waits for its "ready" line on a
// pipe (fd 3 in the child), at most 30 s.
func startLinkProcess(ctx context.Context, c *cluster.Cluster, st *StandingLinks, lp LinkProcess) error {
	logf, err := os.OpenFile(filepath.Join(c.Dir(), "links.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	args := append(append([]string{}, lp.Args...), cluster.LinkStateArg+standingPath(c))
	cmd := exec.Command(lp.Exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	// Its own session: a Ctrl-C in the terminal of `netem apply` must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start link process: %w", err)
	}
	pw.Close()
	st.PID = cmd.Process.Pid
	st.StartTicks, _ = cluster.ProcessStartTicks(st.PID)
	go cmd.Wait() // reap it if it dies while we still run
	type line struct {
		s   string
		err error
	}
	ch := make(chan line, 1)
	go func() {
		s, err := bufio.NewReader(pr).ReadString('\n')
		ch <- line{strings.TrimSpace(s), err}
	}()
	select {
	case l := <-ch:
		if l.s == "ready" {
			return nil
		}
		if l.s == "" && l.err != nil {
			l.s = lastLines(filepath.Join(c.Dir(), "links.log"), 3)
		}
		return fmt.Errorf("link process: %s", l.s)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return fmt.Errorf("link process not ready after 30s: %s", lastLines(filepath.Join(c.Dir(), "links.log"), 3))
	}
}

// ServeStanding is the link process: it builds the userspace link for the request recorded
// in cluster c's StandingLinksFile, writes "ready\n" (or the error) to ready and closes
// it, then forwards until ctx ends, the cluster's state file disappears (destroyed) or
// the link fails. Closing the link removes its TUN devices and routes.
func ServeStanding(ctx context.Context, c *cluster.Cluster, ready io.WriteCloser) error {
	fail := func(err error) error {
		fmt.Fprintf(ready, "%v\n", err)
		ready.Close()
		return err
	}
	st, err := ReadStanding(c)
	if err != nil || st == nil {
		return fail(fmt.Errorf("no link request recorded for cluster %s (%v)", c.Name, err))
	}
	eps, err := LinkEndpoints(c)
	if err != nil {
		return fail(err)
	}
	spec, err := st.Request.Build(nodeNames(c))
	if err != nil {
		return fail(err)
	}
	u, err := netem.NewUserspace(eps, spec)
	if err != nil {
		return fail(err)
	}
	defer u.Close()
	fmt.Fprintln(ready, "ready")
	ready.Close()
	fmt.Fprintf(os.Stderr, "%s link for cluster %s: %s\n", time.Now().UTC().Format(time.RFC3339), c.Name, strings.Join(spec.Describe(), ", "))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "%s stopping: %v\n", time.Now().UTC().Format(time.RFC3339), context.Cause(ctx))
			return nil
		case <-tick.C:
		}
		if err := u.Err(); err != nil {
			return fmt.Errorf("link failed: %w", err)
		}
		if _, err := os.Stat(filepath.Join(c.Dir(), "state.json")); err != nil {
			fmt.Fprintf(os.Stderr, "%s cluster %s is gone, stopping\n", time.Now().UTC().Format(time.RFC3339), c.Name)
			return nil
		}
	}
}

// ClearStanding removes cluster c's standing impairments: it stops the link process (the
// recorded one and any found by its argument), removes habench's qdiscs where the kernel
// backend was used, and deletes the record. Idempotent: clearing a cluster without
// impairments succeeds. Works after a crash of `netem apply` or of the link process.
func ClearStanding(c *cluster.Cluster) error {
	unlock, err := lockStanding(c)
	if err != nil {
		return err
	}
	defer unlock()
	var eps []netem.Endpoint
	if c.Network == cluster.NetNamespaces {
		eps, _ = LinkEndpoints(c)
	}
	return clearStanding(c, eps)
}

func clearStanding(c *cluster.Cluster, eps []netem.Endpoint) error {
	st, rerr := ReadStanding(c)
	var errs []error
	if st != nil && st.PID > 0 {
		if err := cluster.Terminate(st.PID, st.StartTicks, 5*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("link process: %w", err))
		}
	}
	for _, pid := range cluster.LinkProcesses(c) {
		if err := cluster.Terminate(pid, 0, 5*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("link process: %w", err))
		}
	}
	// Qdiscs: when the record says kernel, or when it is unreadable and the kernel could
	// have been used.
	if len(eps) > 0 && ((st != nil && st.Backend == netem.BackendKernel) || (rerr != nil && netem.KernelAvailable() == nil)) {
		if err := netem.ClearKernel(eps); err != nil {
			errs = append(errs, fmt.Errorf("remove qdiscs: %w", err))
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(standingPath(c)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LinkLeftovers lists what of an impairment is still present in cluster c's namespaces or
// processes: a TUN device (netem.TunName), an htb root qdisc on a node's interface, or a
// link process. Empty after ClearStanding.
func LinkLeftovers(c *cluster.Cluster) []string {
	var left []string
	for _, pid := range cluster.LinkProcesses(c) {
		left = append(left, fmt.Sprintf("link process %d", pid))
	}
	if c.Network != cluster.NetNamespaces {
		return left
	}
	eps, err := LinkEndpoints(c)
	if err != nil {
		return append(left, err.Error())
	}
	for _, e := range eps {
		found, err := netem.Residue(e)
		if err != nil {
			left = append(left, fmt.Sprintf("%s: %v", e.Name, err))
		}
		for _, f := range found {
			left = append(left, e.Name+": "+f)
		}
	}
	return left
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func nodeNames(c *cluster.Cluster) []string {
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Name)
	}
	return names
}

// lastLines returns the last n non-empty lines of file p joined by "; " ("" if unreadable).
func lastLines(p string, n int) string {
	b, _ := os.ReadFile(p)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}
