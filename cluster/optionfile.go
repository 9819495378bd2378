package cluster

// The option file habench writes for a node it deploys, on this machine or on a host.

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/habench/habench/topology"
)

// SandboxServerOptions are the server options habench sets on every node it deploys (a
// local sandbox's or one on the user's hosts) beyond what its topology needs (addresses,
// paths, replication): max_connections=1000, because the servers' default 151 refuses a
// run of more than about 150 threads on a node (a thread count sweep to 256 or 512, plus
// the samplers' and heartbeat's connections). A topology's options: come after them in
// the option file, so a max_connections there wins. The manifest records them (cluster.sandbox_options) and the run reads them back
// like the topology's options.
var SandboxServerOptions = []topology.Option{{Name: "max_connections", Value: "1000"}}

// TestServerOptionsEnv names the test harness's extra server options (make test sets it):
// "name=value" pairs separated by spaces that every node habench deploys gets in its option
// file after SandboxServerOptions, before the topology's options, each with the loose_
// prefix so a server that lacks one ignores it. make test uses it to start cheaper test
// servers (the Makefile's TESTSERVEROPTS: a trimmed performance schema, a small InnoDB log
// buffer). Not for users: the manifest does not record these options, and nothing reads
// them back.
const TestServerOptionsEnv = "HABENCH_TEST_SERVER_OPTIONS"

// testServerOptions are TestServerOptionsEnv's options (none when it is unset); a pair
// without "=" is an option without a value.
func testServerOptions() []topology.Option {
	var opts []topology.Option
	for _, f := range strings.Fields(os.Getenv(TestServerOptionsEnv)) {
		name, value, _ := strings.Cut(f, "=")
		opts = append(opts, topology.Option{Name: "loose_" + strings.TrimPrefix(name, "loose_"), Value: value})
	}
	return opts
}

// nodeOptionFile is node n's option file, wherever it runs: user root when asRoot, its
// paths under its ServerDir, its port and address (bind_address too when bind), extra,
// habench's own server options (SandboxServerOptions), the test harness's
// (TestServerOptionsEnv), the installation's basedir,
// MySQL's secure_file_priv and mysqlx, then the plan's options (last, so they win). A
// Galera node also gets an [sst] group that keeps its SST scripts' log archive in its own
// directory (sst-log-archive-dir), where mariabackup's and xtrabackup's scripts would
// otherwise leave one in /tmp/sst_log_archive per transfer, past the cluster's destroy.
func nodeOptionFile(c *Cluster, n *Node, np topology.NodePlan, asRoot, bind bool, extra ...topology.Option) string {
	d := n.ServerDir
	var opts []topology.Option
	if asRoot {
		opts = append(opts, topology.Option{Name: "user", Value: "root"})
	}
	opts = append(opts, []topology.Option{
		{Name: "datadir", Value: d + "/data"},
		{Name: "socket", Value: d + "/mysqld.sock"},
		{Name: "pid_file", Value: d + "/mysqld.pid"},
		{Name: "log_error", Value: d + "/error.log"},
		{Name: "tmpdir", Value: d + "/tmp"},
		{Name: "port", Value: strconv.Itoa(n.Port)},
	}...)
	if bind {
		opts = append(opts, topology.Option{Name: "bind_address", Value: n.Host})
	}
	opts = append(opts, topology.Option{Name: "report_host", Value: n.Host}, topology.Option{Name: "report_port", Value: strconv.Itoa(n.Port)})
	opts = append(opts, extra...)
	opts = append(opts, SandboxServerOptions...)
	opts = append(opts, testServerOptions()...)
	if c.Binaries.Basedir != "" {
		opts = append(opts, topology.Option{Name: "basedir", Value: c.Binaries.Basedir})
	}
	if topology.FlavorOf(c.Binaries.Flavor).Install.MySQLX {
		opts = append(opts, topology.Option{Name: "secure_file_priv", Value: d + "/tmp"}, topology.Option{Name: "mysqlx", Value: "OFF"})
	}
	opts = append(opts, np.Options...)
	var b strings.Builder
	b.WriteString("# written by habench for " + c.Name + "/" + n.Name + "\n[mysqld]\n")
	for _, o := range opts {
		if o.Value == "" {
			fmt.Fprintf(&b, "%s\n", o.Name)
		} else {
			fmt.Fprintf(&b, "%s=%s\n", o.Name, o.Value)
		}
	}
	if slices.ContainsFunc(np.Options, func(o topology.Option) bool { return o.Name == "wsrep_sst_method" }) {
		fmt.Fprintf(&b, "[sst]\nsst-log-archive-dir=%s/sst_log_archive\n", d)
	}
	return b.String()
}
