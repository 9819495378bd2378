package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/clients"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// ClientHosts are a run's client hosts (topology.Clients) made ready once for the run
// (OpenClients): each reached over SSH, able to run this habench (or running a habench of
// this version: Clients.Bin), its clock measured. A run's workload goes to them through
// Workload; each run copies habench to the hosts and removes it again (ClientsWorkload.Run).
type ClientHosts struct {
	spec  topology.Clients
	field string
	out   io.Writer
	log   *slog.Logger // debug lines: each copy made and removed (never nil)
	exe   string       // this habench program, copied to the hosts (without Bin)
	hosts map[string]*host.SSH
	// names are each client's destination host and the host name its ssh configuration
	// gives it (ssh -G), for the shared-host refusal.
	names  map[string][]string
	clocks map[string]host.Clock
	// clockErrs are the clients whose clock could not be read (their start is not moved).
	clockErrs map[string]string
	mu        sync.Mutex // guards names, clocks and clockErrs while check fills them
}

// clientsOpenTimeout bounds OpenClients' work on the hosts.
const clientsOpenTimeout = time.Minute

// OpenClients checks spec (field names it: "clients" in a scenario, "--clients" on the
// command line) and every client host, all at once, before anything is deployed: reached
// over SSH, and able to run a copy of this habench (its system and architecture: uname
// -sm) or, with spec.Bin, running a habench of this version there; then measures each
// host's clock offset (host.ClockOffset; a clock that cannot be read is written to out as
// a NOTE: that client starts unmoved). Errors are one line: a *topology.FieldError on
// field for bad input or a host of another architecture, "field: client NAME: ..." for a
// host that cannot be reached or runs another habench. Nothing is left on the hosts. log
// (nil: none) gets a debug line for each copy of habench made on a client and removed.
func OpenClients(ctx context.Context, spec topology.Clients, field string, out io.Writer, log *slog.Logger) (*ClientHosts, error) {
	if err := spec.Validate(field); err != nil {
		return nil, err
	}
	sp := spec.SSH
	if sp == nil {
		sp = &topology.SSHSpec{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &ClientHosts{spec: spec, field: field, out: out, log: log, hosts: map[string]*host.SSH{}, names: map[string][]string{},
		clocks: map[string]host.Clock{}, clockErrs: map[string]string{}}
	for _, n := range spec.Hosts {
		h, err := cluster.ClientSSH(sp, n)
		if err != nil {
			return nil, err
		}
		c.hosts[n] = h
	}
	if spec.Bin == "" {
		exe, err := selfProgram()
		if err != nil {
			return nil, fmt.Errorf("this habench program: %w", err)
		}
		c.exe = exe
	}
	cctx, cancel := context.WithTimeout(ctx, clientsOpenTimeout)
	defer cancel()
	if err := c.each(func(n string) error { return c.check(cctx, n) }); err != nil {
		return nil, err
	}
	return c, nil
}

// selfProgram is the path to read this habench program from for the clients' copies:
// /proc/self/exe where there is one (the running program even when its file was replaced
// since it started: a long sweep's copies stay its own version), else os.Executable.
func selfProgram() (string, error) {
	const self = "/proc/self/exe"
	if f, err := os.Open(self); err == nil {
		f.Close()
		return self, nil
	}
	return os.Executable()
}

// each runs f for every client at once and returns the first client's error (in the
// clients' order).
func (c *ClientHosts) each(f func(client string) error) error {
	errs := make([]error, len(c.spec.Hosts))
	var wg sync.WaitGroup
	for i, n := range c.spec.Hosts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(n) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// check is OpenClients' work on one client: the program check, the names, the clock.
func (c *ClientHosts) check(ctx context.Context, n string) error {
	h := c.hosts[n]
	if c.spec.Bin != "" {
		if err := c.runner(nil).Check(ctx, n, Version); err != nil {
			return fmt.Errorf("%s: %w", c.field, err) // the error names the client
		}
	} else if err := cluster.CheckSelfCopy(ctx, h, c.exe, c.field); err != nil {
		var fe *topology.FieldError
		if errors.As(err, &fe) {
			return err
		}
		return fmt.Errorf("%s: client %s: %w", c.field, n, err)
	}
	names := []string{hostOf(n)}
	if res, err := h.Resolve(ctx); err == nil && res.HostName != "" && res.HostName != names[0] {
		names = append(names, res.HostName)
	}
	off, unc, cerr := host.ClockOffset(ctx, h, host.DefaultClockRounds)
	c.lock(func() {
		c.names[n] = names
		if cerr != nil {
			c.clockErrs[n] = cerr.Error()
		} else {
			c.clocks[n] = host.Clock{Offset: off, Uncertainty: unc}
		}
	})
	if cerr != nil && c.out != nil {
		c.lock(func() {
			fmt.Fprintf(c.out, "NOTE: client %s: its clock could not be read (%v): its start is not moved by an offset\n", n, cerr)
		})
	}
	return nil
}

// lock runs f with c.mu held.
func (c *ClientHosts) lock(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// hostOf is an ssh destination's host ("user@host" -> "host").
func hostOf(dest string) string {
	if i := strings.LastIndexByte(dest, '@'); i >= 0 {
		return dest[i+1:]
	}
	return dest
}

// runner is the clients' SSH runner; bins are their copies of habench (nil: Bin).
func (c *ClientHosts) runner(bins map[string]string) clients.SSHRunner {
	return clients.SSHRunner{Bin: c.spec.Bin, Bins: bins, Host: func(n string) *host.SSH { return c.hosts[n] }}
}

// Names are the clients, as given.
func (c *ClientHosts) Names() []string { return slices.Clone(c.spec.Hosts) }

// CheckTarget refuses a run of target from the clients, in one line naming the field:
// workers that follow the writer or fail over (the coordinator's view of the cluster does
// not reach the clients), a server given as a unix socket of this machine, or (without
// AllowShared) a client whose host is a server's host of the run.
func (c *ClientHosts) CheckTarget(t workload.Target) error {
	list := strings.Join(c.spec.Hosts, ",")
	if t.Follow != nil || t.Failover != nil {
		return &topology.FieldError{Field: c.field, Value: list, Reason: "the workers follow the writer or fail over between nodes, which the clients cannot: give the workload a fixed writer (writer: fixed, --writer fixed) and no client failover (failover: off)"}
	}
	eps := append(slices.Clone(t.Endpoints), t.ReadEndpoints...)
	for _, e := range eps {
		if e.Socket != "" {
			return &topology.FieldError{Field: c.field, Value: list, Reason: fmt.Sprintf("server %s is a unix socket of this machine: the clients connect over TCP", e.Label())}
		}
	}
	if c.spec.AllowShared {
		return nil
	}
	var servers []string
	for _, e := range eps {
		servers = append(servers, e.Host)
	}
	return c.CheckShared(servers)
}

// CheckShared refuses (without AllowShared) a client whose host, by its destination or
// the host name its ssh configuration gives it, is one of servers (host names or
// addresses of the run's database servers).
func (c *ClientHosts) CheckShared(servers []string) error {
	if c.spec.AllowShared {
		return nil
	}
	for _, n := range c.spec.Hosts {
		for _, s := range servers {
			if slices.Contains(c.names[n], s) {
				return &topology.FieldError{Field: c.field, Value: strings.Join(c.spec.Hosts, ","),
					Reason: fmt.Sprintf("client %s is also database server %s of the run: give another host, or allow the shared host (%s)", n, s, c.allowWord())}
			}
		}
	}
	return nil
}

// allowWord is how the user allows a shared client host where the clients were given.
func (c *ClientHosts) allowWord() string {
	if strings.HasPrefix(c.field, "--") {
		return "--allow-shared-client"
	}
	return c.field + ".allow_shared: true"
}

// Record is manifest.json "clients": every client with how habench ran there and its
// clock offset.
func (c *ClientHosts) Record() []schema.ClientHost {
	var out []schema.ClientHost
	for _, n := range c.spec.Hosts {
		r := schema.ClientHost{Name: n, Habench: c.spec.Bin, ClockError: c.clockErrs[n]}
		if c.spec.Bin == "" {
			r.Habench = "a copy of this habench in /tmp/" + clients.CopyDirPrefix + "* (removed after the run)"
		}
		if cl, ok := c.clocks[n]; ok {
			off, unc := ms(cl.Offset), ms(cl.Uncertainty)
			r.OffsetMs, r.UncertaintyMs = &off, &unc
		}
		out = append(out, r)
	}
	return out
}

// offsets are the clients' measured clock offsets (clients.Config.Offsets).
func (c *ClientHosts) offsets() map[string]time.Duration {
	m := map[string]time.Duration{}
	for n, cl := range c.clocks {
		m[n] = cl.Offset
	}
	return m
}

// openClients opens the scenario's clients (OpenClients; nil without any) before anything
// is deployed, and refuses (without allow_shared) a client whose host is the host of a
// deployment on the user's hosts that the run deploys (by destination or by the host
// name the ssh configuration gives it). Other shared hosts (an existing cluster's
// servers) are refused when a cell starts (ClientHosts.CheckTarget).
func (r *ScenarioRun) openClients(ctx context.Context, plan *scenario.Plan, torun func(*scenario.Cell) bool) (*ClientHosts, error) {
	if r.Scenario.Clients.IsZero() {
		return nil, nil
	}
	field := r.ClientsField
	if field == "" {
		field = "clients"
	}
	if err := r.Scenario.CheckClientsReach(field); err != nil {
		return nil, err
	}
	spec := r.Scenario.Clients
	refuse := func(why string) error {
		return &topology.FieldError{Field: field, Value: strings.Join(spec.Hosts, ","), Reason: why}
	}
	for _, cell := range plan.Cells {
		if _, err := clients.Split(cell.Options, len(spec.Hosts)); torun(cell) && err != nil {
			return nil, refuse(fmt.Sprintf("cell %d: %v", cell.Index, err))
		}
	}
	c, err := OpenClients(ctx, spec, field, r.Stdout, r.Log)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, clientsOpenTimeout)
	defer cancel()
	for _, d := range plan.Deployments {
		if !slices.ContainsFunc(d.Cells, torun) {
			continue
		}
		servers, err := r.clientsAgainst(cctx, d, refuse)
		if err != nil {
			return nil, err
		}
		if err := c.CheckShared(servers); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// clientsAgainst returns the hosts of deployment d's servers that are known before the
// run (a deployment on the user's hosts: their destinations and the host names their ssh
// configuration gives; a cluster of the state directory: its nodes' hosts), and refuses
// (refuse) a cluster of the state directory whose workers would follow its writer, as
// its cells would (the scenario's checks see only a topology's spec: CheckClients).
func (r *ScenarioRun) clientsAgainst(ctx context.Context, d *scenario.Deployment, refuse func(string) error) ([]string, error) {
	var servers []string
	for _, dest := range d.Spec.Hosts {
		servers = append(servers, hostOf(dest))
		if h, err := cluster.ClientSSH(d.Spec.SSH, dest); err == nil {
			if res, err := h.Resolve(ctx); err == nil && res.HostName != "" {
				servers = append(servers, res.HostName)
			}
		}
	}
	if d.Spec.Cluster == "" {
		return servers, nil
	}
	cl, err := r.Store.Load(d.Spec.Cluster)
	if err != nil {
		return nil, err // preflight said it exists
	}
	for _, n := range cl.Nodes {
		servers = append(servers, n.Host)
	}
	w := r.Scenario.Workload
	if w.Writer == "" && len(w.Nodes.For(d.Spec.Name)) == 0 && cl.Deployed() && scenario.DefaultWriterMode(cl.Spec) == scenario.WriterAuto {
		return nil, refuse(fmt.Sprintf("%s (cluster %s) is a single-primary group whose workers would follow the writer, which the clients cannot: give workload.writer: fixed", d.Spec.Name, d.Spec.Cluster))
	}
	return servers, nil
}
