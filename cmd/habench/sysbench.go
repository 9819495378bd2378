package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"github.com/spf13/cobra"
)

type sysbenchOpts struct {
	wl      workload.Options
	conn    workload.ConnFlags
	cluster string
	results string
	nodes   []string
	// readNodes: --read-nodes
	readNodes []string
	// writer: --writer
	writer    string
	catchUp   time.Duration
	links     string
	metrics   string
	knobs     []string
	keep      bool
	liveNodes bool
	// failover: --failover
	failover bool
	// via: --via
	via string
	// cl: --clients and its flags
	cl clientsOpts
}

func newSysbenchCmd(g *globalOpts) *cobra.Command {
	o := &sysbenchOpts{wl: workload.DefaultOptions(), conn: workload.DefaultConnFlags()}
	cmd := &cobra.Command{
		Use:   "sysbench TESTNAME prepare|run|cleanup",
		Short: "sysbench-compatible OLTP workloads: same options, same output, against a sandbox or any server",
		Long: "Runs sysbench's OLTP tests (" + strings.Join(workload.Names(), ", ") + ")\n" +
			"with sysbench's option names and defaults and its output format.\n" +
			"Options are sysbench 1.0.20's unless their help says \"sysbench 1.1's\" (--warmup-time, --rand-zipfian-exp, --rand-type zipfian) or \"habench:\";\n" +
			"--cluster, --results, --nodes, --read-nodes, --writer, --failover, --links, --metrics-addr, --set, --keep-knobs, --catch-up-timeout, --clients and its --client-* flags are habench's own.\n" +
			"With --cluster NAME it targets a habench sandbox (its writable nodes), samples every node each second\n" +
			"and, with --results DIR, writes manifest.json, intervals.csv, samples.csv, summary.json and report.md.\n" +
			"Without --cluster it connects like sysbench: --mysql-host, --mysql-port, --mysql-user, ...\n" +
			"As with sysbench, give run and cleanup the same --tables and --table-size as prepare (run warns when they differ).",
		Example: `  habench sysbench oltp_read_write prepare --cluster t1 --tables 4 --table-size 10000
  habench sysbench oltp_read_write run --cluster t1 --tables 4 --table-size 10000 --threads 8 --time 30 --report-interval 1 --results out/
  habench sysbench oltp_read_only run --mysql-host 127.0.0.1 --mysql-port 3306 --mysql-user sbtest --threads 4`,
		Args: exactArgs(2, "TESTNAME", "prepare|run|cleanup"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, g, args[0], args[1])
		},
	}
	f := cmd.Flags()
	workload.BindFlags(f, &o.wl)
	workload.BindConnFlags(f, &o.conn)
	f.StringVar(&o.cluster, "cluster", "", "run against this habench sandbox or registered existing cluster (instead of --mysql-host/--mysql-port/--mysql-user/--mysql-password/--mysql-socket)")
	f.StringVar(&o.results, "results", "", "run: write a results directory under this directory")
	f.StringSliceVar(&o.nodes, "nodes", nil, "with --cluster: nodes the workers connect to, round-robin (default: the writable nodes)")
	f.StringVar(&o.writer, "writer", "", "with --cluster, run (habench's own): auto (the workers follow the writer: after a group elects a new primary or habench fault promote, they reconnect to it; lost connections are retried) or fixed (they stay on --nodes); default auto for a single-primary group without --nodes, else fixed")
	f.BoolVar(&o.failover, "failover", false, "with --cluster, run (habench's own): on a Galera cluster or a multi-primary group, a worker whose node fails (lost connection, 1047/1290/1792/3100, or hung --writer-hang while the cluster does not count the node live) moves to another live node of --nodes and goes back once its node is live again; those failures are retried whatever --mysql-ignore-errors says (without it, as sysbench: they end the run unless ignored)")
	f.StringVar(&o.via, "via", scenario.ViaDirect, "with --cluster, run (habench's own): direct (the workers connect to the nodes) or proxy (to the cluster's proxy's write endpoint, which picks the node; lost connections and read-only refusals are retried)")
	f.StringSliceVar(&o.readNodes, "read-nodes", nil, "with --cluster, run (habench's own): nodes the read-only statements go to, round-robin per worker, while writes stay on --nodes; each transaction that changed a row then reads it back there and counts stale reads per node")
	f.StringVar(&o.links, "links", "", "with --cluster (netns): one-way impairment on every directed link between nodes during the run, e.g. \"0.6ms\" or \"delay 5ms jitter 1ms loss 0.1%\" (round trip = twice the delay)")
	addMetricsFlag(cmd, &o.metrics)
	f.StringArrayVar(&o.knobs, "set", nil, "with --cluster, run: knob [NODES:]NAME=VALUE set for the run, read back from every node, restored after it (repeatable; see habench knob --help)")
	f.BoolVar(&o.keep, "keep-knobs", false, "with --set: leave the values in place after the run")
	f.BoolVar(&o.liveNodes, "live-nodes", false, "with --cluster, run: after each report interval, a line with every node's lag, backlog, queues and flow control")
	o.cl.bind(f)
	f.DurationVar(&o.catchUp, "catch-up-timeout", 2*time.Minute, "with --cluster: after the run, how long to wait for replicas to apply everything before checking GTID sets")
	return cmd
}

func (o *sysbenchOpts) run(cmd *cobra.Command, g *globalOpts, test, command string) error {
	wl, err := workload.Lookup(test)
	if err != nil {
		return usageError{err}
	}
	knobs, err := o.checkFlags(cmd, command)
	if err != nil {
		return err
	}
	if err := o.cl.check(cmd, command, o); err != nil {
		return err
	}
	var c *cluster.Cluster
	var target workload.Target
	if o.cluster != "" {
		c, target, err = o.clusterTarget(cmd, g, command)
	} else {
		target, err = o.serverTarget()
	}
	if err != nil {
		return err
	}
	if o.keep && len(knobs) == 0 && (c == nil || len(c.Spec.Knobs) == 0) {
		return usagef("--keep-knobs: needs --set, or a cluster with knobs: (it keeps the values they set)")
	}
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	switch command {
	case "prepare":
		fmt.Fprintf(out, "habench %s (sysbench 1.0.20 compatible)\n\n", version)
		return wl.Prepare(ctx, target, o.wl, out)
	case "cleanup":
		fmt.Fprintf(out, "habench %s (sysbench 1.0.20 compatible)\n\n", version)
		return wl.Cleanup(ctx, target, o.wl, out)
	}
	links, err := o.linkSpec(c)
	if err != nil {
		return err
	}
	if len(o.cl.clients) > 0 {
		if wl, err = o.cl.workload(ctx, wl, &target, c, out, g.log); err != nil {
			return err
		}
	}
	b := &experiment.Bench{
		Workload: wl, Options: o.wl, Target: target, Cluster: c, ResultsDir: o.results,
		Stdout: out, Log: g.log, CommandLine: os.Args, CatchUpTimeout: o.catchUp, Links: links,
		Knobs: knobs, KeepKnobs: o.keep, Restarter: g.store(), Failover: o.failover,
	}
	if o.via == scenario.ViaProxy {
		b.Via = o.via
	}
	return o.runBench(cmd, b)
}

// checkFlags refuses flags given with a command or without --cluster that would be
// ignored, and parses the --set knobs; errors are usage errors naming the flag.
func (o *sysbenchOpts) checkFlags(cmd *cobra.Command, command string) ([]topology.KnobSetting, error) {
	switch command {
	case "prepare", "run", "cleanup":
	default:
		return nil, usagef("command %q: want prepare, run or cleanup", command)
	}
	if err := o.wl.Validate(); err != nil {
		return nil, usageError{err}
	}
	if o.results != "" && command != "run" {
		return nil, usagef("--results %q: only for run", o.results)
	}
	if o.links != "" && command != "run" {
		return nil, usagef("--links %q: only for run", o.links)
	}
	if o.metrics != "" && command != "run" {
		return nil, usagef("--metrics-addr %q: only for run", o.metrics)
	}
	if o.failover && command != "run" {
		return nil, usagef("--failover: only for run")
	}
	if o.failover {
		for i, n := range o.nodes {
			if slices.Contains(o.nodes[:i], n) {
				return nil, usagef("--nodes %q: %s given twice: with --failover give each node once (the workers are spread over them and fail over between them)", strings.Join(o.nodes, ","), n)
			}
		}
	}
	knobs, err := parseKnobArgs(o.knobs)
	if err != nil {
		return nil, err
	}
	if len(knobs) > 0 && command != "run" {
		return nil, usagef("--set %q: only for run", o.knobs[0])
	}
	if len(knobs) > 0 && o.cluster == "" {
		return nil, usagef("--set %q: needs --cluster (habench restores what it set only on clusters it knows)", o.knobs[0])
	}
	if o.cluster == "" {
		// Flags that only mean something for a cluster habench knows would be ignored.
		if len(o.nodes) > 0 {
			return nil, usagef("--nodes %q: needs --cluster (without it, --mysql-host and --mysql-port choose the servers)", strings.Join(o.nodes, ","))
		}
		if len(o.readNodes) > 0 {
			return nil, usagef("--read-nodes %q: needs --cluster", strings.Join(o.readNodes, ","))
		}
		if o.writer != "" {
			return nil, usagef("--writer %q: needs --cluster", o.writer)
		}
		if o.failover {
			return nil, usagef("--failover: needs --cluster (habench asks the cluster which nodes are live)")
		}
		if o.via != scenario.ViaDirect {
			return nil, usagef("--via %q: needs --cluster (the proxy is a member of a habench cluster)", o.via)
		}
		if cmd.Flags().Changed("catch-up-timeout") {
			return nil, usagef("--catch-up-timeout %q: needs --cluster (it waits for a cluster's replicas)", o.catchUp)
		}
	}
	if o.catchUp <= 0 {
		return nil, usagef("--catch-up-timeout %q: want a duration > 0, e.g. 2m", o.catchUp)
	}
	if err := checkResultsDir(o.results); err != nil {
		return nil, err
	}
	return knobs, nil
}

// clusterTarget loads --cluster (ready, or a field error) and returns its workload target:
// --nodes, --read-nodes and the writer mode (--writer).
func (o *sysbenchOpts) clusterTarget(cmd *cobra.Command, g *globalOpts, command string) (*cluster.Cluster, workload.Target, error) {
	var target workload.Target
	for _, fl := range []string{"mysql-host", "mysql-port", "mysql-user", "mysql-password", "mysql-socket"} {
		if cmd.Flags().Changed(fl) {
			return nil, target, usagef("--%s: not allowed with --cluster %s (the cluster knows its addresses and users)", fl, o.cluster)
		}
	}
	c, err := g.store().Load(o.cluster)
	if err != nil {
		if errors.Is(err, cluster.ErrNotFound) {
			return nil, target, &topology.FieldError{Field: "--cluster", Value: o.cluster, Reason: "no such cluster (habench status lists them)"}
		}
		return nil, target, err
	}
	if c.State != "ready" {
		return nil, target, &topology.FieldError{Field: "--cluster", Value: o.cluster, Reason: fmt.Sprintf("state %s, not ready (habench destroy %s, then deploy again)", c.State, o.cluster)}
	}
	if o.via != scenario.ViaDirect {
		if target, err = o.proxyTarget(c, command); err != nil {
			return nil, target, err
		}
		return c, target, experiment.WithReadNodes(c, &target, o.readNodes)
	}
	if target, err = experiment.ClusterTarget(c, o.conn.DB, o.nodes); err != nil {
		return nil, target, err
	}
	if len(o.readNodes) > 0 && command != "run" {
		return nil, target, usagef("--read-nodes %q: only for run", strings.Join(o.readNodes, ","))
	}
	if err = experiment.WithReadNodes(c, &target, o.readNodes); err != nil {
		return nil, target, err
	}
	mode, err := o.writerMode(c)
	if err != nil {
		return nil, target, err
	}
	// Following the writer reads the roles habench records in the cluster's state (a
	// promote updates them): only on clusters habench deployed.
	if mode == scenario.WriterAuto && command == "run" && c.Deployed() {
		target.Follow = experiment.FollowWriter(g.store(), c.Name)
	}
	if o.failover {
		switch {
		case scenario.CanFollow(c.Spec) == "":
			return nil, target, usagef("--failover: cluster %s (%s) has a single writer: its workers follow it instead (--writer auto)", c.Name, c.Spec.Kind)
		case len(target.Endpoints) < 2:
			return nil, target, usagef("--failover: --nodes %s is one node: give two or more, or no --nodes for every node", strings.Join(o.nodes, ","))
		}
	}
	return c, target, nil
}

// writerMode is --writer checked against the cluster and --nodes, or the kind's default
// ("" with --nodes and no --writer).
func (o *sysbenchOpts) writerMode(c *cluster.Cluster) (string, error) {
	mode := o.writer
	switch mode {
	case "":
		if len(o.nodes) == 0 {
			mode = scenario.DefaultWriterMode(c.Spec)
		}
	case scenario.WriterFixed:
	case scenario.WriterAuto:
		if why := scenario.CanFollow(c.Spec); why != "" {
			return "", usagef("--writer %q: %s", o.writer, why)
		}
		if len(o.nodes) > 0 {
			return "", usagef("--writer %q: --nodes chooses the nodes; auto follows the writer instead", o.writer)
		}
	default:
		return "", usagef("--writer %q: want auto or fixed", o.writer)
	}
	return mode, nil
}

// serverTarget is the target of --mysql-host/--mysql-port/... without --cluster: any host
// the user names; under the test harness's network guard only this machine's loopback and
// namespaces, and no name lookups.
func (o *sysbenchOpts) serverTarget() (workload.Target, error) {
	target, err := o.conn.Target()
	if err != nil {
		return target, usageError{err}
	}
	for _, e := range target.Endpoints {
		if e.Socket == "" {
			if err := cluster.CheckExistingHost(e.Host); err != nil && e.Host != "localhost" {
				return target, &topology.FieldError{Field: "--mysql-host", Value: e.Host, Reason: err.Error()}
			}
		}
	}
	target.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return cluster.GuardedDial(ctx, addr)
	}
	return target, nil
}

// linkSpec is --links as a uniform spec over c's links (nil without --links), or a field
// error when c cannot have link impairments.
func (o *sysbenchOpts) linkSpec(c *cluster.Cluster) (*netem.Spec, error) {
	if o.links == "" {
		return nil, nil
	}
	if c == nil {
		return nil, usagef("--links %q: needs --cluster", o.links)
	}
	imp, err := netem.ParseImpairment(o.links)
	if err != nil {
		return nil, &topology.FieldError{Field: "--links", Value: o.links, Reason: err.Error()}
	}
	var refused *cluster.UnsupportedError
	if errors.As(c.Refuse(cluster.OpLinks, ""), &refused) {
		return nil, &topology.FieldError{Field: "--links", Value: o.links, Reason: fmt.Sprintf("cluster %s is %s: %s", c.Name, refused.Provider, refused.Why)}
	}
	if len(c.Nodes) < 2 {
		return nil, &topology.FieldError{Field: "--links", Value: o.links, Reason: fmt.Sprintf("cluster %s has %d node: there is no link between nodes to impair", c.Name, len(c.Nodes))}
	}
	return links.Uniform(c, imp)
}

// runBench runs b with the live metrics (--metrics-addr) and node lines (--live-nodes)
// attached, and says where the results and the report are.
func (o *sysbenchOpts) runBench(cmd *cobra.Command, b *experiment.Bench) error {
	m, stopMetrics, err := liveMetrics(o.metrics, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer stopMetrics()
	if o.liveNodes {
		(&experiment.LiveNodes{W: b.Stdout}).Attach(b)
	}
	if done := attachMetrics(m, b); done != nil {
		defer done()
	}
	res, err := b.Run(cmd.Context())
	if res != nil && res.Dir != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "results: %s\n", res.Dir)
		if _, serr := os.Stat(filepath.Join(res.Dir, "report.html")); serr == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", filepath.Join(res.Dir, "report.html"))
		}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

// checkResultsDir refuses a --results path that exists and is not a directory (a
// results directory could not be made under it); "" and paths still to be made are fine.
func checkResultsDir(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return usagef("--results %q: not a directory", path)
	}
	return nil
}

// proxyTarget is the target of --via proxy: the cluster's proxy (experiment.ProxyTarget),
// refused with --nodes, --writer and --failover (the proxy picks the node), for another
// command than run, and for a --via other than direct and proxy.
func (o *sysbenchOpts) proxyTarget(c *cluster.Cluster, command string) (workload.Target, error) {
	switch {
	case o.via != scenario.ViaProxy:
		return workload.Target{}, usagef("--via %q: want direct or proxy", o.via)
	case command != "run":
		return workload.Target{}, usagef("--via %q: only for run (prepare and cleanup use the writable nodes)", o.via)
	case len(o.nodes) > 0 || o.writer != "" || o.failover:
		return workload.Target{}, usagef("--via %q: the proxy picks the node; --nodes, --writer and --failover are for direct connections", o.via)
	}
	return experiment.ProxyTarget(c, o.conn.DB, "--via")
}
