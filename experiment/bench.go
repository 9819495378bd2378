package experiment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// Version is habench's version, recorded in every manifest (set by main from ldflags).
var Version = "0.1.0-dev"

// Bench is one workload run against a target, with sampling and a results directory.
type Bench struct {
	Workload workload.Workload
	Options  workload.Options
	Target   workload.Target
	// Via is scenario.ViaProxy when Target is the cluster's proxy (ProxyTarget), "" when
	// the workers connect to the nodes.
	Via string
	// Cluster, when set, is sampled (every node, once per SampleInterval) and inspected.
	Cluster *cluster.Cluster
	// ResultsDir is the parent of the run directory; "" writes no results.
	ResultsDir string
	// Label names the run directory (default: cluster or first endpoint, and the workload).
	Label string
	// Stdout receives sysbench-format output (header, interval lines, summary); may be nil.
	Stdout io.Writer
	Log    *slog.Logger
	// CommandLine is recorded in the manifest.
	CommandLine []string
	// SampleInterval defaults to 1s.
	SampleInterval time.Duration
	// OnInterval and OnSamples, when set, see every interval and every tick's samples
	// (live metrics).
	OnInterval func(workload.Interval)
	OnSamples  func([]sampler.Sample)
	// OnLive, when set, gets the run's live counters just before the workers start
	// (live metrics that move as transactions complete).
	OnLive func(*workload.Live)
	// CatchUpTimeout bounds the wait for replicas to apply everything after the run
	// before the consistency check (default 120s).
	CatchUpTimeout time.Duration
	// Extra is merged into the manifest under "extra" (scenario name, sweep cell, ...).
	Extra map[string]any
	// Links, when set, are applied between the cluster's nodes for the run (kernel netem or
	// the userspace link) and removed afterwards; requested and achieved round trips go to
	// manifest.json. Needs a cluster in network namespaces.
	Links *netem.Spec

	ignoreNote string // why the ignore list was extended for several writers (multiWriterIgnore)
	// Failover makes the workers fail over between the target's nodes when their node
	// fails, on a topology where every node takes writes (failover.go; habench sysbench
	// --failover); a run whose Faults take away a node the workers write to does so
	// without it. Refused (the run's error) where the kind has a single writer, the
	// target one node, or the workers follow the writer.
	Failover bool
	// FailoverOff keeps the workers on their nodes whatever the faults (scenario
	// workload.failover: off): a node's failure ends the run unless its error is ignored,
	// as in sysbench.
	FailoverOff bool
	// Knobs are set for the run on the cluster's nodes (after the cluster's own
	// Spec.Knobs, overriding them for the same scope), read back into manifest.json and
	// restored after the run, also on error or interrupt, unless KeepKnobs (see package knob).
	Knobs     []topology.KnobSetting
	KeepKnobs bool
	// Faults are injected by Injector at their times after the workload starts (nil
	// Injector: none); each is recorded in the cluster's faults log and the manifest.
	Faults   []scenario.FaultEvent
	Injector *Injector
	// Probe runs the probe writer during the workload (needs Injector for the sandbox):
	// a numbered commit every ProbeInterval (0: 5 ms) on the current writer, or through the
	// proxy's write endpoint when Via is proxy (its stale commits counted); after the
	// catch-up the acknowledged ones missing on the writer are counted (Summary.Probe).
	Probe         bool
	ProbeInterval time.Duration
	// Checker, when set, runs a checker workload beside the workload on the cluster's
	// writable nodes (needs Cluster): its history goes to history.jsonl and history.edn, its
	// verdict to Summary.Checks and report.md's Anomalies section.
	Checker *scenario.CheckerSpec
	// CheckerReadNodes are the nodes (by name) the checker's read-only transactions go to
	// (checker.read_nodes for the cell's topology; none: the writable nodes).
	CheckerReadNodes []string
	// Restarter restarts sandbox nodes for knobs that are read only at runtime (nil: such
	// knobs are refused).
	Restarter knob.Restarter
	// ProxyChecks, when given, are the health checks of the cluster's proxy for the run:
	// when they are not those in effect, the proxy is restarted with them first (through
	// ProxyRestarter, cluster.Store.RestartProxy), and with its own after the run's
	// results are written, also on error or interrupt. The manifest's proxy configuration
	// and the summary's checks are the run's. A restart that fails is the run's error.
	ProxyChecks    topology.ProxyChecks
	ProxyRestarter ProxyRestarter
	// ProxyOwn are the topology's own health checks for its proxy, as the scenario gives
	// them (a sweep's deployment's spec): those put back after a run with ProxyChecks, and
	// those a run without restarts the proxy with when it runs others (an earlier run's
	// not put back). Zero: the cluster's spec's at the run's start.
	ProxyOwn topology.ProxyChecks
	// CacheDrops are the hosts whose page cache was dropped before the run
	// (DropClusterCaches), recorded in manifest.json "drop_caches".
	CacheDrops []schema.CacheDrop

	knobVariables []string // server variables the knobs touched, recorded with the key variables
}

// Outcome is what a Bench produced.
type Outcome struct {
	Dir     string
	Result  *workload.Result
	Summary *schema.Summary
}

func (b *Bench) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}

// effectiveLinks is the spec of the impairments during the run: the run's own, or the
// standing ones (nil: none).
func (b *Bench) effectiveLinks(standing *links.Standing) *netem.Spec {
	if b.Links != nil {
		return b.Links
	}
	if standing != nil && b.Cluster != nil {
		if spec, err := links.Build(standing.Request, b.Cluster); err == nil {
			return spec
		}
	}
	return nil
}

func (b *Bench) catchUp() time.Duration {
	if b.CatchUpTimeout > 0 {
		return b.CatchUpTimeout
	}
	return 120 * time.Second
}

func (b *Bench) sampleInterval() time.Duration {
	if b.SampleInterval > 0 {
		return b.SampleInterval
	}
	return time.Second
}

// openNodes opens an admin pool per cluster node (root over the unix socket), or one
// pool per endpoint with the workload's credentials when there is no cluster.
func (b *Bench) openNodes() ([]sampler.Node, func(), error) {
	var nodes []sampler.Node
	closeAll := func() {
		for _, n := range nodes {
			n.DB.Close()
		}
	}
	if b.Cluster != nil {
		caps := b.Cluster.Capabilities()
		for _, n := range b.Cluster.Nodes {
			db, err := b.Cluster.OpenAdmin(n)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			sn := sampler.Node{Name: n.Name, Role: n.Role, Caps: caps, DB: db}
			if h := b.Cluster.Host(n); h != nil {
				sn.Host, sn.HostName = h, b.Cluster.Provider().HostName(b.Cluster, n)
				// A provider that runs the servers records each one's process: the sampler
				// reads its /proc/PID through the node's host (this machine or SSH).
				if b.Cluster.Deployed() {
					c, name := b.Cluster, n.Name
					sn.Netns, sn.PID, sn.StartTicks = n.Netns, n.PID, n.StartTicks
					sn.Server = func() (int, uint64, error) { return c.ServerProcess(name) }
				}
			}
			nodes = append(nodes, sn)
		}
		return nodes, closeAll, nil
	}
	for i, e := range b.Target.Endpoints {
		db, err := sql.Open("mysql", endpointDSN(b.Target, e))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		db.SetMaxOpenConns(2)
		role := topology.RoleSource
		if i > 0 {
			role = ""
		}
		nodes = append(nodes, sampler.Node{Name: e.Label(), Role: role, DB: db})
	}
	return nodes, closeAll, nil
}

func (b *Bench) manifest(ctx context.Context, started time.Time, nodes []sampler.Node) *schema.Manifest {
	host, _ := os.Hostname()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	m := &schema.Manifest{
		Habench:     map[string]string{"version": Version, "go": runtime.Version()},
		CommandLine: RedactArgs(b.CommandLine),
		Started:     started,
		Host:        map[string]any{"hostname": host, "kernel": strings.TrimSpace(string(kernel)), "cpus": runtime.NumCPU()},
		Workload: schema.ManifestWorkload{Name: b.Workload.Name(), Options: workload.OptionValues(b.Options),
			SysbenchCompatible: "1.0.20", RandType: b.Options.RandType, PSMode: b.Options.PSMode},
		Extra:      b.Extra,
		Links:      map[string]any{"impairment": "none"},
		CacheDrops: b.CacheDrops,
	}
	if mix, err := workload.StatementMix(b.Workload.Name(), b.Options); err == nil {
		m.Workload.StatementMix = &mix
	}
	for _, e := range b.Target.Endpoints {
		m.Workload.Endpoints = append(m.Workload.Endpoints, e.Label())
	}
	switch {
	case b.Via == scenario.ViaProxy:
		m.Workload.Via = b.Via
	case b.Target.Follow != nil:
		m.Workload.Writer = scenario.WriterAuto
	}
	for _, e := range b.Target.ReadEndpoints {
		m.Workload.ReadEndpoints = append(m.Workload.ReadEndpoints, e.Label())
	}
	if cw, ok := b.Workload.(*ClientsWorkload); ok {
		m.Clients = cw.c.Record()
	}
	if c := b.Cluster; c != nil {
		m.Topology = &c.Spec
		m.Binaries = binariesRecord(c.Binaries)
		m.Proxy = proxyRecord(c)
		m.Cluster = map[string]any{"name": c.Name, "provider": c.Provider().Name(), "network": c.Network}
		if c.Deployed() {
			so := map[string]string{}
			for _, o := range cluster.SandboxServerOptions {
				so[o.Name] = o.Value
			}
			m.Cluster["sandbox_options"] = so
		}
		m.Links["network"] = c.Network
		m.Links["description"] = c.Provider().NetworkDescription(c)
	}
	for _, n := range nodes {
		m.Nodes = append(m.Nodes, b.nodeInfo(ctx, n))
	}
	m.Workload.IgnoreErrorsNote = b.ignoreNote
	m.Workload.IDSpace = idSpaceNote(m.Nodes, b.Options.TableSize)
	return m
}

// binariesRecord is manifest.json's record of the cluster's binaries (nil: none).
func binariesRecord(b *cluster.Binaries) *schema.Binaries {
	if b == nil {
		return nil
	}
	return &schema.Binaries{Installation: b.Installation, Flavor: string(b.Flavor), Version: b.Version.String(),
		VersionText: b.VersionText, Root: b.Root, Server: b.Server, InstallDB: b.InstallDB, Basedir: b.Basedir,
		WsrepProvider: b.WsrepProvider}
}

// nodeInfo is node n as the manifest records it: its address and the key variables read
// back from its server (an "error" variable when they could not be read).
func (b *Bench) nodeInfo(ctx context.Context, n sampler.Node) schema.NodeInfo {
	info := schema.NodeInfo{Name: n.Name, Role: string(n.Role)}
	if b.Cluster != nil {
		if cn := b.Cluster.Node(n.Name); cn != nil {
			info.Address = cn.Addr()
		}
	} else {
		info.Address = n.Name
	}
	vars, err := ReadVariables(ctx, n.DB)
	if err != nil {
		b.log().Warn("cannot read variables", "node", n.Name, "err", err)
		info.Variables = map[string]string{"error": err.Error()}
		return info
	}
	var extra []string
	if b.Cluster != nil {
		for k := range b.Cluster.Spec.Options {
			extra = append(extra, k)
		}
	}
	extra = append(extra, b.knobVariables...)
	info.Variables = pick(vars, keyVariables, extra...)
	if b.Cluster != nil && b.Cluster.Spec.Is(topology.Galera) {
		galeraVariables(info.Variables, vars, &b.Cluster.Spec)
	}
	info.Version = vars["version"]
	return info
}

func (b *Bench) allVariables(ctx context.Context, nodes []sampler.Node) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, n := range nodes {
		if v, err := ReadVariables(ctx, n.DB); err == nil {
			out[n.Name] = v
		}
	}
	return out
}

// notOnlineError: the GTID sets are equal but these group members (node -> MEMBER_STATE)
// are not ONLINE.
type notOnlineError struct{ states map[string]string }

func (e *notOnlineError) Error() string {
	var ps []string
	for _, n := range slices.Sorted(maps.Keys(e.states)) {
		ps = append(ps, n+" "+e.states[n])
	}
	return "GTID sets equal, but " + strings.Join(ps, ", ")
}

// waitConsistent waits until every node's GTID position equals the writer's and, in a
// group, every node is an ONLINE member (a member still RECOVERING can already have the
// writer's GTID set while it applies its cached transactions); it returns the positions
// (node -> GTID set or binlog position). Error when ctx ends first, describing the last
// whole round of checks (a round the deadline cut short says only that the deadline
// came), or at once when a node stays unreachable for 3 s (a dead server never catches up).
func waitConsistent(ctx context.Context, c *cluster.Cluster, nodes []sampler.Node) (map[string]string, error) {
	var last *consistencyRound
	failingSince := map[string]time.Time{}
	for {
		r := checkConsistency(ctx, c, nodes)
		if ctx.Err() == nil || last == nil {
			last = r
		}
		if ctx.Err() == nil {
			if err := r.unreachable(failingSince); err != nil {
				return r.pos, err
			}
		}
		if r.consistent(c.Writer().Name) {
			return r.pos, nil
		}
		select {
		case <-ctx.Done():
			return last.pos, last.err(c.Writer().Name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// consistencyRound is one check of every node: its position, the errors of the nodes that
// could not be read (node -> error) and the group members not ONLINE (node -> state).
type consistencyRound struct {
	pos       map[string]string
	errs      map[string]error
	notOnline map[string]string
}

// checkConsistency reads every node's position and, for a group member, its state, each
// node within 2 s.
func checkConsistency(ctx context.Context, c *cluster.Cluster, nodes []sampler.Node) *consistencyRound {
	r := &consistencyRound{pos: map[string]string{}, errs: map[string]error{}, notOnline: map[string]string{}}
	for _, n := range nodes {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		p, err := consistencyPosition(qctx, c, n.DB)
		if err == nil && c.Spec.Is(topology.Group) && n.Role != topology.RoleReplica {
			var m cluster.GroupMember
			if m, err = cluster.ReadGroupMember(qctx, n.DB, n.Name); err == nil && m.State != "ONLINE" {
				r.notOnline[n.Name] = m.State
			}
		}
		cancel()
		if err != nil {
			r.errs[n.Name] = err
		}
		r.pos[n.Name] = p
	}
	return r
}

// unreachable records in failingSince (node -> first failed round) when each node began
// failing, and returns an error naming a node that has failed for more than 3 s.
func (r *consistencyRound) unreachable(failingSince map[string]time.Time) error {
	for _, n := range slices.Sorted(maps.Keys(r.pos)) {
		err, failed := r.errs[n]
		switch {
		case !failed:
			delete(failingSince, n)
		case failingSince[n].IsZero():
			failingSince[n] = time.Now()
		case time.Since(failingSince[n]) > 3*time.Second:
			return fmt.Errorf("node %s unreachable, cannot check it caught up: %w", n, err)
		}
	}
	return nil
}

// sameSets: every node was read and has the writer's position.
func (r *consistencyRound) sameSets(writer string) bool {
	if len(r.errs) > 0 {
		return false
	}
	for _, p := range r.pos {
		if p != r.pos[writer] {
			return false
		}
	}
	return true
}

// consistent: the same positions everywhere and every group member ONLINE.
func (r *consistencyRound) consistent(writer string) bool {
	return r.sameSets(writer) && len(r.notOnline) == 0
}

// err says why the round was not consistent.
func (r *consistencyRound) err(writer string) error {
	if r.sameSets(writer) {
		return &notOnlineError{r.notOnline}
	}
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(r.errs)) {
		errs = append(errs, fmt.Errorf("%s: %w", n, r.errs[n]))
	}
	return fmt.Errorf("GTID positions differ: %v %v", r.pos, errors.Join(errs...))
}

// measuredSamples are the samples at or after fromS seconds on samples.csv's clock (the
// start of measurement); all of them when fromS is not positive (no interval was reported).
func measuredSamples(samples []sampler.Sample, fromS float64) []sampler.Sample {
	if fromS <= 0 {
		return samples
	}
	from := time.Duration(fromS * float64(time.Second))
	out := make([]sampler.Sample, 0, len(samples))
	for _, sm := range samples {
		if sm.Elapsed >= from {
			out = append(out, sm)
		}
	}
	return out
}

func (b *Bench) summary(r *workload.Result, runErr error, nodes []sampler.Node, samples []sampler.Sample, pos map[string]string) *schema.Summary {
	s := &schema.Summary{Workload: b.Workload.Name(), Threads: b.Options.Threads, RandType: b.Options.RandType, PSMode: b.Options.PSMode}
	if runErr != nil {
		s.Error = runErr.Error()
	}
	if r != nil {
		s.TimeS = r.TotalTime.Seconds()
		s.TPS, s.QPS = r.TPS(), r.QPS()
		s.ClientCPUCores = r.ClientCPUCores
		s.Clients = clientRows(b.Workload)
		s.Transactions, s.Reads, s.Writes, s.Others = r.Transactions, r.Reads, r.Writes, r.Others
		s.IgnoredErrors, s.Reconnects = r.IgnoredErrors, r.Reconnects
		s.LatencyMs = map[string]float64{"min": r.LatencyMin, "avg": r.LatencyAvg, "max": r.LatencyMax,
			"p50": r.LatencyP50, "p95": r.LatencyP95, "p99": r.LatencyP99, "sum": r.LatencySum}
		addPercentiles(s.LatencyMs, b.Options, r)
		s.Rate = rateSummary(r)
		if len(r.ErrorsByCode) > 0 {
			s.ErrorsByCode = map[string]int64{}
			for k, v := range r.ErrorsByCode {
				s.ErrorsByCode[fmt.Sprint(k)] = v
			}
		}
		s.PerEndpoint = r.PerEndpoint
		s.RandType, s.PSMode = r.RandType, r.PSMode
		hangSummary(s, r)
	}
	if err := sampler.Summarize(sampler.SummaryInput{Nodes: nodes, Samples: samples, Every: b.sampleInterval()}, s); err != nil {
		s.Error = strings.TrimPrefix(s.Error+"; "+err.Error(), "; ")
	}
	byNode := map[string]*schema.NodeLag{}
	for _, n := range nodes {
		byNode[n.Name] = &schema.NodeLag{Node: n.Name, Role: string(n.Role), GTIDPosition: pos[n.Name]}
	}
	maxp := func(p **float64, v float64) {
		if *p == nil || v > **p {
			*p = &v
		}
	}
	for _, sm := range samples {
		nl := byNode[sm.Node]
		if nl == nil {
			continue
		}
		switch sm.Metric {
		case sampler.MetricBacklog:
			maxp(&nl.BacklogMaxTrx, sm.Value)
		case sampler.MetricApplierLag:
			maxp(&nl.ApplierLagMaxS, sm.Value)
		case sampler.MetricSamplerErrors:
			nl.SamplerErrors = sm.Value
		}
	}
	lags := lagStats(samples, 0)
	for _, n := range nodes {
		nl := byNode[n.Name]
		if st := lags[n.Name]; st != nil {
			nl.LagMaxS, nl.Samples, nl.LagUnknownS = st.max, st.n, st.unknownS
			if st.n > 0 {
				avg := st.sum / float64(st.n)
				nl.LagAvgS = &avg
			}
		}
		s.Nodes = append(s.Nodes, *nl)
	}
	sort.SliceStable(s.Nodes, func(i, j int) bool { return s.Nodes[i].Node < s.Nodes[j].Node })
	return s
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// endpointDSN is a DSN for e with the target's credentials (no database selected).
func endpointDSN(t workload.Target, e workload.Endpoint) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = t.User, t.Password
	cfg.Timeout = 10 * time.Second
	if e.Socket != "" {
		cfg.Net, cfg.Addr = "unix", e.Socket
	} else {
		cfg.Net, cfg.Addr = "tcp", fmt.Sprintf("%s:%d", e.Host, e.Port)
	}
	return cfg.FormatDSN()
}

// checkData compares the prepared tables with the options (--tables, --table-size) on the
// first node: a run with other options than prepare silently runs another workload (ids
// missing, writes that touch no row). Returns "" when they match, else what differs.
func (b *Bench) checkData(ctx context.Context, nodes []sampler.Node) string {
	if len(nodes) == 0 || b.Workload.Name() == "bulk_insert" {
		// bulk_insert's tables are sbtest1..--threads, created empty and filled by run.
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	db := nodes[0].DB
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA=? AND TABLE_NAME REGEXP '^sbtest[0-9]+$'", b.Target.DB).Scan(&tables); err != nil {
		return ""
	}
	if tables == 0 {
		return fmt.Sprintf("database %s has no sbtest tables: run prepare first", b.Target.DB)
	}
	var msgs []string
	if tables != b.Options.Tables {
		msgs = append(msgs, fmt.Sprintf("%d sbtest tables prepared, --tables %d", tables, b.Options.Tables))
	}
	// Prepare wrote ids 1..table-size; oltp_insert may have added more above. Only a
	// missing id = --table-size means run would address rows that do not exist.
	var found int
	q := fmt.Sprintf("SELECT COUNT(*) FROM `%s`.sbtest1 WHERE id = ?", strings.ReplaceAll(b.Target.DB, "`", "``"))
	sparse := sparseIDs(ctx, db, b.Target.DB, b.Options.TableSize)
	if sparse == "" {
		if err := db.QueryRowContext(ctx, q, b.Options.TableSize).Scan(&found); err == nil && found == 0 {
			msgs = append(msgs, fmt.Sprintf("sbtest1 has no row with id %d (--table-size %d is larger than what was prepared)", b.Options.TableSize, b.Options.TableSize))
		}
	}
	var out []string
	if len(msgs) > 0 {
		out = append(out, strings.Join(msgs, "; ")+" (give run the same --tables and --table-size as prepare)")
	}
	if sparse != "" {
		out = append(out, sparse)
	}
	return strings.Join(out, "; ")
}

// ClusterTarget makes a workload target of cluster c's nodes (default: the writable ones,
// round-robin), connecting as the sandbox's benchmark user through the guarded dialer.
// Error (*topology.FieldError on "--nodes") for a node name the cluster lacks.
func ClusterTarget(c *cluster.Cluster, db string, only []string) (workload.Target, error) {
	t := workload.Target{User: c.User, Password: c.Password, DB: db,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return cluster.GuardedDial(ctx, addr)
		}}
	for _, name := range only {
		n := c.Node(name)
		if n == nil {
			return t, &topology.FieldError{Field: "--nodes", Value: name, Reason: "no such node in " + c.Name}
		}
		t.Endpoints = append(t.Endpoints, workload.Endpoint{Name: n.Name, Host: n.Host, Port: n.Port})
	}
	if len(only) == 0 {
		for _, n := range c.Nodes {
			if n.Role.Writable() {
				t.Endpoints = append(t.Endpoints, workload.Endpoint{Name: n.Name, Host: n.Host, Port: n.Port})
			}
		}
	}
	return t, nil
}

func clientBound(wl workload.Workload, r *workload.Result) string {
	if cw, ok := wl.(*ClientsWorkload); ok && cw.Outcome() != nil {
		return cw.Outcome().ClientBoundWarning() // names the clients
	}
	if r == nil {
		return ""
	}
	return r.ClientBoundWarning()
}

// WithReadNodes sets t's read endpoints (workload.Target.ReadEndpoints) to cluster c's
// nodes called names (topology.ProxyName: its proxy's read endpoint, labelled
// ProxyReadLabel): the read-only statements go there, the writes stay on t's endpoints,
// and every event that changed a row is checked for read-your-writes on its read node. Error (*topology.FieldError on "--read-nodes") for a node name the cluster
// lacks or one given twice.
func WithReadNodes(c *cluster.Cluster, t *workload.Target, names []string) error {
	seen := map[string]bool{}
	for _, name := range names {
		if ep, ok := proxyReadEndpoint(c, name); ok {
			if seen[name] {
				return &topology.FieldError{Field: "--read-nodes", Value: name, Reason: "given twice"}
			}
			seen[name] = true
			t.ReadEndpoints = append(t.ReadEndpoints, ep)
			continue
		}
		n := c.Node(name)
		if n == nil {
			return &topology.FieldError{Field: "--read-nodes", Value: name, Reason: "no such node in " + c.Name}
		}
		if seen[name] {
			return &topology.FieldError{Field: "--read-nodes", Value: name, Reason: "given twice"}
		}
		seen[name] = true
		t.ReadEndpoints = append(t.ReadEndpoints, workload.Endpoint{Name: n.Name, Host: n.Host, Port: n.Port})
	}
	return nil
}

// applyKnobs sets the cluster's own knobs and the run's (see Bench.Knobs) and prints
// what each node took. nil, nil when there are none.
func (b *Bench) applyKnobs(ctx context.Context) (*knob.Applied, error) {
	var settings []topology.KnobSetting
	if b.Cluster != nil && len(b.Cluster.Spec.Knobs) > 0 {
		own, err := topology.KnobsFromMap(b.Cluster.Spec.Knobs)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", b.Cluster.Name, err)
		}
		settings = own
	}
	settings = knob.Merge(settings, b.Knobs)
	if len(settings) == 0 {
		return nil, nil
	}
	if b.Cluster == nil {
		return nil, &topology.FieldError{Field: "--set", Value: settings[0].String(), Reason: "knobs need a habench cluster (--cluster)"}
	}
	a, err := knob.Apply(ctx, b.Cluster, settings, knob.Options{Keep: b.KeepKnobs, Restarter: b.Restarter, Log: b.log()})
	if err != nil {
		return nil, err
	}
	for _, v := range a.Values() {
		if v.Method != string(knob.MethodProvider) && v.Method != string(knob.MethodGroupMode) && !slices.Contains(b.knobVariables, v.Variable) {
			b.knobVariables = append(b.knobVariables, v.Variable)
		}
	}
	if b.Stdout != nil {
		when := "restored after the run"
		if b.KeepKnobs {
			when = "kept after the run"
		}
		fmt.Fprintf(b.Stdout, "knobs (%s):\n", when)
		knob.PrintValues(b.Stdout, a.Values(), false)
		for _, n := range a.Notes() {
			fmt.Fprintf(b.Stdout, "note: %s\n", n)
		}
		fmt.Fprintln(b.Stdout)
	}
	return a, nil
}
