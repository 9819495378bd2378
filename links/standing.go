package links

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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// StandingFile is the record, in the cluster's directory, of the impairments applied
// with `habench netem apply`. They outlive that command: kernel qdiscs stay in the nodes'
// namespaces, and the userspace link runs in a detached link process (`habench netem
// serve`, found by its cluster.LinkStateArg argument even when its PID was never recorded).
const StandingFile = "links.json"

// Standing is the content of StandingFile.
type Standing struct {
	Cluster string        `json:"cluster"`
	Request netem.Request `json:"request"`
	Backend string        `json:"backend"` // netem.BackendKernel, BackendUserspace or BackendRemote
	// PID and StartTicks identify the link process (userspace backend; 0 while starting).
	PID        int                    `json:"pid,omitempty"`
	StartTicks uint64                 `json:"start_ticks,omitempty"`
	Applied    time.Time              `json:"applied"`
	Report     *schema.LinkImpairment `json:"report,omitempty"` // nil until measured
	// Hosts is what habench created on the nodes' hosts over SSH (netem.BackendRemote).
	Hosts []RemoteHostRecord `json:"hosts,omitempty"`

	linkThread string // what the link process said of its thread's scheduling class
}

// LinkPID returns the PID of cluster c's running link process for this record: the
// recorded one if it is still that process and carries c's cluster.LinkStateArg, else
// (record written before the PID, by an apply that crashed) any process with that
// argument; 0 if none runs.
func (s *Standing) LinkPID(c *cluster.Cluster) int {
	live := cluster.LinkProcesses(c)
	if s.PID > 0 && s.StartTicks != 0 && cluster.ProcessAlive(s.PID, s.StartTicks) && slices.Contains(live, s.PID) {
		return s.PID
	}
	if len(live) > 0 {
		return live[0]
	}
	return 0
}

// Alive reports whether the impairments are in effect as far as processes go: always for
// the kernel backend (qdiscs need no process), and for the userspace one while a link
// process of the cluster runs (LinkPID).
func (s *Standing) Alive(c *cluster.Cluster) bool {
	if s.Backend == netem.BackendKernel || s.Backend == netem.BackendRemote {
		return true
	}
	return s.LinkPID(c) > 0
}

func standingPath(c *cluster.Cluster) string { return filepath.Join(c.Dir(), StandingFile) }

// ReadStanding returns cluster c's standing links, nil (and no error) if there are none.
// Errors: an unreadable or corrupt record.
func ReadStanding(c *cluster.Cluster) (*Standing, error) {
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
	var s Standing
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", standingPath(c), err)
	}
	return &s, nil
}

func writeStanding(c *cluster.Cluster, s *Standing) error {
	return writeRecord(standingPath(c), s)
}

// writeRecord writes s to path atomically (a temporary file renamed over it).
func writeRecord(path string, s *Standing) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600)
}

// Lock files in the cluster's directory. flock locks die with their process, so a held
// lock always means a live holder.
const (
	standingLock = "links.lock"     // held by netem apply and clear while they work
	runLinksLock = "links-run.lock" // held by a run with its own links (--links, scenario links)
)

// lockStanding serialises apply and clear on one cluster.
func lockStanding(c *cluster.Cluster) (func(), error) { return c.Lock(standingLock, false) }

// held reports whether lock name of c is held by a live process right now.
func held(c *cluster.Cluster, name string) bool {
	if c.Dir() == "" {
		return false
	}
	unlock, err := c.Lock(name, true)
	if err != nil || unlock == nil {
		return err == nil
	}
	unlock()
	return false
}

// ApplyInProgress reports whether a `netem apply` or `netem clear` is working on c now.
func ApplyInProgress(c *cluster.Cluster) bool { return held(c, standingLock) }

// RunLinksActive reports whether a run with its own links (--links, scenario links) is
// going on on c now: its impairments end with it.
func RunLinksActive(c *cluster.Cluster) bool { return held(c, runLinksLock) }

// LockRunLinks marks c as impaired by this run until the returned func is called. Error:
// standing impairments are being applied, or another run holds links on c.
func LockRunLinks(c *cluster.Cluster) (func(), error) {
	if c.Dir() == "" {
		return func() {}, nil
	}
	unlock, err := c.Lock(runLinksLock, true)
	if err != nil {
		return nil, err
	}
	if unlock == nil {
		return nil, fmt.Errorf("cluster %s: another run with links is going on", c.Name)
	}
	if ApplyInProgress(c) {
		unlock()
		return nil, fmt.Errorf("cluster %s: a `habench netem apply` is in progress", c.Name)
	}
	return unlock, nil
}

// Process is how ApplyStanding starts the detached link process: Exe with Args, to
// which it appends cluster.LinkStateArg + the record's path. The process must run
// ServeStanding.
type Process struct {
	Exe  string
	Args []string
}

// ApplyStanding replaces cluster c's impairments with req until ClearStanding (or
// destroy): it clears what was there, checks that req can be applied, measures the plain
// round trips, applies req and measures again, recording everything in StandingFile
// (what it creates is recorded before it is created). How depends on c.Links(): in the
// nodes' namespaces kernel netem where the kernel has it, else the userspace link in a
// detached process started with lp; over SSH tc on the nodes' hosts, every host checked
// before anything changes on any. Errors: req does not build over the cluster's nodes
// (*netem.RequestError), c's provider does not impair links (*cluster.UnsupportedError:
// a loopback sandbox, an existing cluster without ssh:), a host cannot be reached or
// lacks what tc needs, the link cannot start, ctx ends. On any error (also ctx ending:
// SIGINT) nothing is left applied.
func ApplyStanding(ctx context.Context, c *cluster.Cluster, req netem.Request, lp Process) (st *Standing, err error) {
	la, err := linksOf(c)
	if err != nil {
		return nil, err
	}
	if la.size() < 2 {
		return nil, &netem.RequestError{Field: "cluster", Value: c.Name, Err: fmt.Errorf("has %d node(s): there is no link between nodes to impair", la.size())}
	}
	spec, err := Build(req, c)
	if err != nil {
		return nil, err
	}
	unlock, err := lockStanding(c)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if RunLinksActive(c) {
		return nil, fmt.Errorf("cluster %s: a run with --links (or scenario links) is going on; its impairments end with it, apply after it", c.Name)
	}
	if err := la.reach(ctx); err != nil {
		return nil, err
	}
	if err := clearStanding(c, la); err != nil {
		return nil, fmt.Errorf("clear the previous impairments: %w", err)
	}
	if err := la.ready(ctx, spec); err != nil {
		return nil, err
	}
	base, err := la.measure(ctx, nil, 10, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("measure links before applying: %w", err)
	}
	st = &Standing{Cluster: c.Name, Request: req, Applied: time.Now().UTC()}
	defer func() {
		if err != nil {
			if cerr := clearStanding(c, la); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up: %w", cerr))
			}
		}
	}()
	if err := la.applyStanding(ctx, c, st, spec, lp); err != nil {
		return nil, err
	}
	rtts, err := la.measure(ctx, spec, 20, 3*time.Second)
	if err != nil {
		return nil, fmt.Errorf("measure after apply (%s): %w", st.Backend, err)
	}
	if !st.Alive(c) {
		return nil, fmt.Errorf("link process %d died while measuring: %s", st.PID, lastLines(filepath.Join(c.Dir(), "links.log"), 3))
	}
	st.Report = linkReport(st.Backend, spec, base, rtts)
	st.Report.LinkThread = st.linkThread
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
func startLinkProcess(ctx context.Context, c *cluster.Cluster, st *Standing, lp Process) error {
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
		if sched, ok := strings.CutPrefix(l.s, "ready "); ok {
			st.linkThread = sched
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
// in cluster c's StandingFile, writes "ready\n" (or the error) to ready and closes
// it, then forwards until ctx ends, the cluster's state file disappears (destroyed) or
// the link fails. Closing the link removes its TUN devices and routes.
func ServeStanding(ctx context.Context, c *cluster.Cluster, ready io.WriteCloser) error {
	fail := func(err error) error {
		fmt.Fprintf(ready, "%v\n", err)
		ready.Close()
		return err
	}
	st, err := ReadStanding(c)
	if err != nil {
		return fail(err)
	}
	if st == nil {
		return fail(fmt.Errorf("no link request recorded for cluster %s", c.Name))
	}
	eps, err := Endpoints(c)
	if err != nil {
		return fail(err)
	}
	spec, err := Build(st.Request, c)
	if err != nil {
		return fail(err)
	}
	u, err := netem.NewUserspace(eps, spec)
	if err != nil {
		return fail(err)
	}
	defer u.Close()
	fmt.Fprintln(ready, "ready "+schedName(u.Realtime()))
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
// recorded one and any found by its argument), removes habench's qdiscs (in the nodes'
// namespaces; on the nodes' hosts what the record names), removes a crashed run's
// impairments its record names, and deletes the record. Idempotent: clearing a cluster
// without impairments succeeds. Works after a crash of `netem apply`, of a run with
// links or of the link process.
func ClearStanding(c *cluster.Cluster) error {
	unlock, err := lockStanding(c)
	if err != nil {
		return err
	}
	defer unlock()
	if RunLinksActive(c) {
		return fmt.Errorf("cluster %s: a run with --links (or scenario links) is going on; its impairments end with it (interrupt it to end them now)", c.Name)
	}
	la, _ := linksOf(c) // nil: no links to look at beyond the records and processes
	return clearStanding(c, la)
}

// clearStanding removes what the records name (standing impairments, a crashed run's),
// stops c's link processes, removes what la finds left on the links that no record names
// (la nil: nothing), and deletes the standing record. The caller holds the standing lock
// and has checked that no run holds links.
func clearStanding(c *cluster.Cluster, la linkAccess) error {
	var errs []error
	// An unreadable record (written atomically, so not expected) names no host: clear
	// then reports what Leftovers still finds on the hosts.
	if st, _ := ReadStanding(c); st != nil {
		if err := clearRemote(c, st); err != nil {
			errs = append(errs, err)
		}
	}
	// A crashed run's impairments on the nodes' hosts, as its record names them (none is
	// written for impairments in namespaces).
	if err := clearRunRemote(c); err != nil {
		errs = append(errs, fmt.Errorf("a crashed run's impairments: %w", err))
	}
	// Only processes that carry this cluster's --link-state argument are signalled: a
	// PID from the record alone could be anything by now.
	for _, pid := range cluster.LinkProcesses(c) {
		if err := cluster.Terminate(pid, 0, 5*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("link process: %w", err))
		}
	}
	if la != nil {
		if err := la.clearResidue(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(standingPath(c)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what of an impairment is still present on cluster c's links: a
// link process; in the nodes' namespaces a TUN device (netem.TunName) or an htb root
// qdisc on a node's interface; on the nodes' hosts over SSH a root qdisc of habench's.
// Empty after ClearStanding.
func Leftovers(c *cluster.Cluster) []string {
	var left []string
	for _, pid := range cluster.LinkProcesses(c) {
		left = append(left, fmt.Sprintf("link process %d", pid))
	}
	if c.Links() == cluster.LinksNone {
		return left
	}
	la, err := linksOf(c)
	if err != nil {
		return append(left, err.Error())
	}
	return append(left, la.leftovers()...)
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// NodeNames returns the names of c's members in order (n1, n2, ..., then aux nodes such as an arbitrator): the nodes links and partitions apply to.
func NodeNames(c *cluster.Cluster) []string {
	var names []string
	for _, n := range c.Members() {
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

// Build builds req over c's members with c's sites (for intra, inter and pair).
// Errors: netem.RequestError, naming the field.
func Build(req netem.Request, c *cluster.Cluster) (*netem.Spec, error) {
	return req.WithSites(Sites(c.Spec.Sites)).Build(NodeNames(c))
}

// Sites converts a topology's sites for netem.Request.WithSites.
func Sites(sites topology.Sites) []netem.Site {
	var out []netem.Site
	for _, s := range sites {
		out = append(out, netem.Site{Name: s.Name, Nodes: s.Nodes})
	}
	return out
}
