package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/internal/testmachine"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

var habenchBin string

// TestMain builds the habench binary once (or takes the one HABENCH_TEST_BIN names: `make
// test` builds bin/habench first, and the tests use it); the CLI tests run it as a user
// would. The CLI tests run under the test harness's network guard unless the environment
// says otherwise, so a plain `go test` cannot send a packet off this machine either.
// cliParallelEnv, when set, is the -parallel of this package's tests (make test: 3).
const cliParallelEnv = "HABENCH_TEST_CLI_PARALLEL"

func TestMain(m *testing.M) {
	// make test runs this package's tests 3 at a time, the others 2 (-parallel): most of
	// them wait for servers the habench processes start, and once the other packages are
	// done this one ran alone for its last 160 s with the cores 30-80% idle.
	if v := os.Getenv(cliParallelEnv); v != "" {
		flag.Parse()
		if err := flag.Set("test.parallel", v); err != nil {
			fmt.Fprintf(os.Stderr, "%s=%q: %v\n", cliParallelEnv, v, err)
			os.Exit(2)
		}
	}
	if os.Getenv(cluster.NetworkGuardEnv) == "" {
		os.Setenv(cluster.NetworkGuardEnv, "1")
	}
	// The habench processes of a test share their SSH masters, as a user's would with
	// host.ControlDirEnv set: one connection per lab host for a test's deploy, runs and
	// destroy, not one per process (the lab's cleanup ends them). Measured: the hosts
	// tests' ssh, sshd and remote shells were a tenth of make test's CPU.
	sshDir := ""
	if os.Getenv(host.ControlDirEnv) == "" {
		d, err := os.MkdirTemp("", "hbsshc-")
		if err != nil {
			panic(err)
		}
		sshDir = d
		os.Setenv(host.ControlDirEnv, d)
	}
	if bin := os.Getenv("HABENCH_TEST_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "HABENCH_TEST_BIN: %v\n", err)
			os.Exit(1)
		}
		habenchBin = bin
		code := m.Run()
		host.CloseAll() // the SSH masters of the lab tests run in-process
		os.RemoveAll(sshDir)
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "hbbin-")
	if err != nil {
		panic(err)
	}
	habenchBin = filepath.Join(dir, "habench")
	out, err := exec.Command("go", "build", "-o", habenchBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	host.CloseAll()
	os.RemoveAll(dir)
	os.RemoveAll(sshDir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// habench runs the binary with HABENCH_STATE_DIR=state, bounded by 5 minutes.
func habench(t *testing.T, state string, args ...string) result {
	t.Helper()
	return execute(t, append([]string{habenchBin}, args...), "HABENCH_STATE_DIR="+state)
}

// execute runs argv with extra environment entries, bounded by 5 minutes, and returns
// its exit code and output; it fails the test only when the command cannot run at all.
func execute(t *testing.T, argv []string, env ...string) result {
	t.Helper()
	return executeWithin(t, 5*time.Minute, argv, env...)
}

// executeWithin is execute bounded by d.
func executeWithin(t *testing.T, d time.Duration, argv []string, env ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return r
}

// stateDir is a fresh state directory for the test's habench commands, whose clusters
// are destroyed at cleanup; the test shares the machine (testmachine.Share).
func stateDir(t *testing.T) string {
	t.Helper()
	testmachine.Share(t)
	d, err := os.MkdirTemp("", "hbcli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		habench(t, d, "destroy", "--all")
		os.RemoveAll(d)
	})
	return d
}

// noClusters fails when the state directory holds any cluster, or the names left any
// namespace, link or process.
func noClusters(t *testing.T, state string, names ...string) {
	t.Helper()
	s := &cluster.Store{StateDir: state}
	if cs, _ := s.List(); len(cs) != 0 {
		t.Errorf("clusters left in %s: %d", state, len(cs))
	}
	for _, n := range names {
		c := &cluster.Cluster{Name: n}
		for i := 1; i <= 3; i++ {
			c.Nodes = append(c.Nodes, &cluster.Node{Name: topology.NodeName(i)})
		}
		if left := cluster.Leftovers(s, c); len(left) > 0 {
			t.Errorf("%s left behind: %s", n, strings.Join(left, ", "))
		}
	}
	if out, _ := exec.Command("pgrep", "-f", state).Output(); len(out) > 0 {
		t.Errorf("processes under %s still running: %s", state, out)
	}
}

// TestBadInput: each bad input gives exit code 2 and one error line naming the field and
// the value, and leaves nothing behind.
func TestBadInput(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	cases := []struct {
		name string
		args []string
		want []string // substrings of the error line
	}{
		{"unknown kind", []string{"deploy", "--name", "bk1", "--kind", "ring"}, []string{"kind", `"ring"`}},
		{"zero nodes", []string{"deploy", "--name", "bk2", "--kind", "async", "--nodes", "0"}, []string{"--nodes", `"0"`}},
		{"negative nodes", []string{"deploy", "--name", "bk2", "--kind", "async", "--nodes", "-3"}, []string{"--nodes", `"-3"`}},
		{"too many nodes", []string{"deploy", "--name", "bk2", "--kind", "async", "--nodes", "12"}, []string{"nodes", `"12"`}},
		{"bad name", []string{"deploy", "--name", "Bad_Name", "--kind", "single"}, []string{"name", `"Bad_Name"`}},
		{"unknown flavor", []string{"deploy", "--name", "bk3", "--flavor", "oracle"}, []string{"--flavor", `"oracle"`}},
		{"bad network", []string{"deploy", "--name", "bk3", "--network", "wifi"}, []string{"network", `"wifi"`}},
		{"missing binaries", []string{"deploy", "--name", "bk4", "--flavor", "mysql", "--installation", "rootfs:/nonexistent/rootfs"}, []string{"installation.path", `"/nonexistent/rootfs"`}},
		{"bad semisync wait point", []string{"deploy", "--name", "bk5", "--kind", "semisync", "--semisync-wait-point", "later"}, []string{"semisync.wait_point", `"LATER"`}},
		{"unknown flag", []string{"deploy", "--name", "bk6", "--colour", "red"}, []string{"unknown flag", "--colour"}},
		{"negative threads", []string{"sysbench", "oltp_read_write", "run", "--threads", "-1", "--mysql-host", "127.0.0.1"}, []string{"--threads", `"-1"`}},
		{"unknown rand type", []string{"sysbench", "oltp_read_write", "run", "--rand-type", "lumpy", "--mysql-host", "127.0.0.1"}, []string{"--rand-type", `"lumpy"`}},
		{"unknown ps mode", []string{"sysbench", "oltp_read_write", "run", "--db-ps-mode", "sometimes"}, []string{"--db-ps-mode", `"sometimes"`}},
		{"unknown test", []string{"sysbench", "oltp_everything", "run"}, []string{"oltp_everything"}},
		{"unknown command", []string{"sysbench", "oltp_read_write", "warmup"}, []string{"command", `"warmup"`}},
		{"unknown cluster", []string{"sysbench", "oltp_read_write", "run", "--cluster", "nope"}, []string{"--cluster", `"nope"`}},
		{"cluster and host", []string{"sysbench", "oltp_read_write", "run", "--cluster", "x", "--mysql-host", "127.0.0.1"}, []string{"--mysql-host"}},
		{"missing scenario", []string{"run", "/nonexistent.yaml"}, []string{"/nonexistent.yaml"}},
		{"destroy without name", []string{"destroy"}, []string{"NAME"}},
		{"links without cluster", []string{"sysbench", "oltp_read_write", "run", "--links", "1ms"}, []string{"--links", `"1ms"`}},
		{"nodes without cluster", []string{"sysbench", "oltp_read_write", "run", "--nodes", "n2", "--mysql-host", "127.0.0.1", "--mysql-port", "1"}, []string{"--nodes", `"n2"`, "needs --cluster"}},
		{"read nodes without cluster", []string{"sysbench", "oltp_read_write", "run", "--read-nodes", "n2", "--mysql-host", "127.0.0.1", "--mysql-port", "1"}, []string{"--read-nodes", `"n2"`, "needs --cluster"}},
		{"catch-up timeout without cluster", []string{"sysbench", "oltp_read_write", "run", "--catch-up-timeout", "5m", "--mysql-host", "127.0.0.1", "--mysql-port", "1"}, []string{"--catch-up-timeout", `"5m0s"`, "needs --cluster"}},
		{"negative catch-up timeout", []string{"sysbench", "oltp_read_write", "run", "--cluster", "x", "--catch-up-timeout", "-1s"}, []string{"--catch-up-timeout", `"-1s"`}},
		{"keep-knobs without set", []string{"sysbench", "oltp_read_write", "run", "--keep-knobs", "--mysql-host", "127.0.0.1", "--mysql-port", "1"}, []string{"--keep-knobs", "needs --set"}},
		{"keep-knobs on prepare", []string{"sysbench", "oltp_read_write", "prepare", "--keep-knobs", "--mysql-host", "127.0.0.1", "--mysql-port", "1"}, []string{"--keep-knobs", "needs --set"}},
		{"results is a file", []string{"sysbench", "oltp_read_write", "run", "--results", "/etc/hostname", "--mysql-host", "127.0.0.1", "--mysql-port", "1"}, []string{"--results", `"/etc/hostname"`, "not a directory"}},
		{"run results is a file", []string{"run", "../../scenarios/quick.yaml", "--results", "/etc/hostname"}, []string{"--results", `"/etc/hostname"`, "not a directory"}},
		{"netem apply with the cluster as argument", []string{"netem", "apply", "bk8", "--all", "1ms"}, []string{`"bk8"`, "--cluster bk8"}},
		{"links on prepare", []string{"sysbench", "oltp_read_write", "prepare", "--links", "1ms"}, []string{"--links", "only for run"}},
		{"failover without cluster", []string{"sysbench", "oltp_read_write", "run", "--failover", "--mysql-host", "127.0.0.1", "--mysql-port", "1"}, []string{"--failover", "needs --cluster"}},
		{"failover on prepare", []string{"sysbench", "oltp_read_write", "prepare", "--failover", "--cluster", "x"}, []string{"--failover", "only for run"}},
		{"failover with a node twice", []string{"sysbench", "oltp_read_write", "run", "--failover", "--cluster", "x", "--nodes", "n1,n2,n1"}, []string{"--nodes", `"n1,n2,n1"`, "n1 given twice", "--failover"}},
		{"multi-line option value", []string{"deploy", "--name", "bk7", "--option", "sync_binlog=1\nserver_id=1"}, []string{"options.sync_binlog"}},
		{"reserved option", []string{"deploy", "--name", "bk7", "--option", "server_id=7"}, []string{"options", `"server_id"`}},
		{"zero semisync timeout", []string{"deploy", "--name", "bk7", "--kind", "semisync", "--semisync-timeout", "0s"}, []string{"--semisync-timeout", `"0s"`}},
		{"duplicate option", []string{"deploy", "--name", "bk7", "--kind", "single", "--option", "innodb_buffer_pool_size=256M", "--option", "innodb-buffer-pool-size=1G"}, []string{"--option", `"innodb-buffer-pool-size=1G"`, "already set by innodb_buffer_pool_size=256M"}},
		{"semisync flag on async", []string{"deploy", "--name", "bk7", "--kind", "async", "--semisync-timeout", "5s"}, []string{"--semisync-timeout", `"5s"`, "only for --kind semisync"}},
		{"semisync flag with file", []string{"deploy", "-f", "/nonexistent.yaml", "--semisync-wait-point", "AFTER_COMMIT"}, []string{"--semisync-wait-point", "not allowed with -f"}},
		{"system installation with path", []string{"deploy", "--name", "bk7", "--kind", "single", "--installation", "system:/opt/x"}, []string{"--installation", `"system:/opt/x"`, "no path"}},
		{"base port on netns", []string{"deploy", "--name", "bk7", "--kind", "single", "--network", "netns", "--base-port", "4000"}, []string{"--base-port", `"4000"`, "loopback"}},
		{"bad base port", []string{"deploy", "--name", "bk7", "--network", "loopback", "--base-port", "70000"}, []string{"base-port", `"70000"`}},
		{"galera with 2 nodes", []string{"deploy", "--name", "gabk1", "--kind", "galera", "--nodes", "2"}, []string{"nodes", `"2"`, "galera"}},
		{"galera on mysql", []string{"deploy", "--name", "gabk1", "--kind", "galera", "--flavor", "mysql"}, []string{"flavor", `"mysql"`}},
		{"malformed provider options", []string{"deploy", "--name", "gabk1", "--kind", "galera", "--option", "wsrep_provider_options=gcs.fc_limit"}, []string{"options.wsrep_provider_options", `"gcs.fc_limit"`}},
		{"bad sst", []string{"deploy", "--name", "gabk1", "--kind", "galera", "--galera-sst", "xtrabackup"}, []string{"galera.sst", `"xtrabackup"`}},
		{"reserved galera option", []string{"deploy", "--name", "gabk1", "--kind", "galera", "--option", "wsrep_cluster_address=gcomm://"}, []string{"options", `"wsrep_cluster_address"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := habench(t, state, c.args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 {
				t.Errorf("want one error line, got %d: %q", len(lines), r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("error %q does not name %s", r.stderr, w)
				}
			}
		})
	}
	noClusters(t, state, "bk1", "bk2", "bk3", "bk4", "bk5", "bk6", "bk7", "gabk1")
}

// TestBadScenario: a scenario with an unknown key fails with its line number, exit 2.
func TestBadScenario(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	f := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(f, []byte("name: x\ntopologies:\n  - name: a\n    kind: single\n    flavor: mariadb\n    nodez: 3\nworkload:\n  test: oltp_read_write\n"), 0o644)
	r := habench(t, state, "run", f)
	if r.code != 2 || !strings.Contains(r.stderr, "line 6") || !strings.Contains(r.stderr, "nodez") {
		t.Errorf("exit %d stderr %q, want 2 and line 6 naming nodez", r.code, r.stderr)
	}
	os.WriteFile(f, []byte("name: x\ntopologies:\n  - name: a\n    kind: single\n    flavor: mariadb\nworkload:\n  test: oltp_read_write\n  options:\n    threads: -4\n"), 0o644)
	r = habench(t, state, "run", f)
	if r.code != 2 || !strings.Contains(r.stderr, "threads") || !strings.Contains(r.stderr, "-4") {
		t.Errorf("exit %d stderr %q, want 2 naming threads and -4", r.code, r.stderr)
	}
	noClusters(t, state)
}

// TestNameAndPortInUse: deploying a name that exists, or onto a taken loopback port, is
// refused with exit 2, and the existing cluster is left intact.
func TestNameAndPortInUse(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	cu1, cu2 := testenv.Name(t, "cu1"), testenv.Name(t, "cu2")
	r := habench(t, state, "deploy", "--name", cu1, "--kind", "single", "--flavor", "mariadb")
	if r.code != 0 {
		t.Fatalf("deploy: exit %d: %s", r.code, r.stderr)
	}
	r = habench(t, state, "deploy", "--name", cu1, "--kind", "async", "--nodes", "2", "--flavor", "mariadb")
	if r.code != 2 || !strings.Contains(r.stderr, `name "`+cu1+`"`) {
		t.Errorf("second deploy of cu1: exit %d stderr %q", r.code, r.stderr)
	}
	st := habench(t, state, "status", cu1)
	if st.code != 0 || !strings.Contains(st.stdout, " ok") {
		t.Errorf("existing cluster damaged by the refused deploy: %d %s %s", st.code, st.stdout, st.stderr)
	}
	// --links on a 1-node cluster: no link to impair (netns as root; loopback otherwise).
	r = habench(t, state, "sysbench", "oltp_read_write", "run", "--cluster", cu1, "--links", "1ms", "--time", "1")
	if r.code != 2 || !strings.Contains(r.stderr, `--links "1ms"`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("--links on a 1-node cluster: exit %d stderr %q, want 2 and one line naming --links", r.code, r.stderr)
	}
	// The server itself refuses an option: bad input, said once, nothing left.
	for opt, want := range map[string]string{"no_such_variable=1": `options "no_such_variable"`, "innodb_buffer_pool_size=lots": `options.innodb_buffer_pool_size "lots"`,
		// refused while parsing options, before error.log is open: on the server's stderr
		"sync_binlog=-5": `options.sync_binlog "-5"`} {
		r = habench(t, state, "deploy", "--name", cu2, "--kind", "async", "--nodes", "2", "--option", opt)
		if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("--option %s: exit %d stderr %q, want 2 and one line with %s", opt, r.code, r.stderr, want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	r = habench(t, state, "deploy", "--name", cu2, "--kind", "single", "--network", "loopback", "--base-port", strconv.Itoa(port))
	if r.code != 2 || !strings.Contains(r.stderr, "port") || !strings.Contains(r.stderr, strconv.Itoa(port)) {
		t.Errorf("deploy on a used port: exit %d stderr %q", r.code, r.stderr)
	}
	if r := habench(t, state, "destroy", cu1); r.code != 0 {
		t.Fatalf("destroy: %d %s", r.code, r.stderr)
	}
	noClusters(t, state, cu1, cu2)
}

// TestSysbenchFlow runs the command sequence on a real async sandbox: deploy,
// status, prepare, run with results, cleanup, destroy; sysbench-format output; nothing left.
func TestSysbenchFlow(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	must := func(args ...string) result {
		t.Helper()
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("habench %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}
	cf1 := testenv.Name(t, "cf1")
	must("deploy", "--name", cf1, "--kind", "async", "--nodes", "3", "--flavor", "mariadb")
	st := must("status", cf1)
	if strings.Count(st.stdout, "io=Yes sql=Yes") != 2 {
		t.Errorf("status does not show two healthy replicas:\n%s", st.stdout)
	}
	must("sysbench", "oltp_read_write", "prepare", "--cluster", cf1, "--tables", "2", "--table_size", "1000")
	results := t.TempDir()
	run := must("sysbench", "oltp_read_write", "run", "--cluster", cf1, "--threads", "2", "--time", "3", "--report-interval", "1", "--results", results)
	for _, w := range []string{"[ 1s ] thds: 2 tps:", "SQL statistics:", "transactions:", "95th percentile:", "Threads fairness:"} {
		if !strings.Contains(run.stdout, w) {
			t.Errorf("run output lacks %q", w)
		}
	}
	if !strings.Contains(run.stderr, "results: "+results) {
		t.Errorf("run does not print the results path: %q", run.stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(results, "*", "report.md"))
	if len(dirs) != 1 {
		t.Fatalf("want one report.md, got %v", dirs)
	}
	rep, _ := os.ReadFile(dirs[0])
	if !strings.Contains(string(rep), "| n2 | replica |") || !strings.Contains(string(rep), "every node's executed GTID set equals the writer's") {
		t.Errorf("report lacks per-replica lag or the consistency line:\n%s", rep)
	}
	var sum struct {
		ReplicasConsistent *bool `json:"replicas_consistent"`
		Nodes              []struct {
			Node         string   `json:"node"`
			LagMaxS      *float64 `json:"lag_max_s"`
			GTIDPosition string   `json:"gtid_position"`
		} `json:"nodes"`
	}
	sb, _ := os.ReadFile(filepath.Join(filepath.Dir(dirs[0]), "summary.json"))
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.ReplicasConsistent == nil || !*sum.ReplicasConsistent || len(sum.Nodes) != 3 {
		t.Errorf("summary.json: replicas_consistent %v, %d nodes", sum.ReplicasConsistent, len(sum.Nodes))
	}
	for _, n := range sum.Nodes {
		if n.LagMaxS == nil || n.GTIDPosition == "" || n.GTIDPosition != sum.Nodes[0].GTIDPosition {
			t.Errorf("node %s: lag %v, GTID position %q vs n1 %q", n.Node, n.LagMaxS, n.GTIDPosition, sum.Nodes[0].GTIDPosition)
		}
	}
	// Read/write splitting: the reads go to the replicas, each transaction is read back
	// there, and an async replica right after the commit is often behind.
	rdRes := t.TempDir()
	rd := must("sysbench", "oltp_read_write", "run", "--cluster", cf1, "--threads", "2", "--time", "2", "--read-nodes", "n2,n3", "--results", rdRes)
	if !strings.Contains(rd.stdout, "Read nodes (") || !strings.Contains(rd.stdout, "    n2: reads ") || !strings.Contains(rd.stdout, "    n3: reads ") {
		t.Errorf("run --read-nodes output lacks the read-node block:\n%s", rd.stdout)
	}
	rdSums, _ := filepath.Glob(filepath.Join(rdRes, "*", "summary.json"))
	if len(rdSums) != 1 {
		t.Fatalf("want one summary.json under %s, got %v", rdRes, rdSums)
	}
	var rdSum struct {
		PerEndpoint map[string]struct {
			Queries    int64 `json:"queries"`
			ReadChecks int64 `json:"read_checks"`
		} `json:"per_endpoint"`
	}
	sb, _ = os.ReadFile(rdSums[0])
	if err := json.Unmarshal(sb, &rdSum); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n2", "n3"} {
		if e := rdSum.PerEndpoint[n]; e.Queries == 0 || e.ReadChecks == 0 {
			t.Errorf("summary.json per_endpoint.%s: %+v, want reads and read-your-writes checks", n, e)
		}
	}
	if r := habench(t, state, "sysbench", "oltp_read_write", "run", "--cluster", cf1, "--read-nodes", "n9"); r.code != 2 ||
		!strings.Contains(r.stderr, "--read-nodes") || !strings.Contains(r.stderr, "n9") || strings.Contains(r.stdout, "Threads started") {
		t.Errorf("--read-nodes n9: exit %d, stdout %q, stderr %q; want exit 2 naming the flag before the run starts", r.code, r.stdout, r.stderr)
	}
	must("sysbench", "oltp_read_write", "cleanup", "--cluster", cf1, "--tables", "2")
	// A user's process that merely names a file in the cluster's directory (a client on
	// its socket, tail -f of its error log) must survive destroy.
	bystander := exec.Command("sh", "-c", "sleep 60", filepath.Join(state, "clusters", cf1, "n1", "error.log"))
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bystander.Process.Kill(); bystander.Wait() }()
	must("destroy", cf1)
	// Our own child: a killed one would be a zombie until Wait, so read its state.
	if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", bystander.Process.Pid)); len(st) == 0 || strings.Contains(string(st), ") Z ") {
		t.Errorf("destroy killed a bystander process naming the cluster directory: %q", st)
	}
	bystander.Process.Kill()
	bystander.Wait()
	noClusters(t, state, cf1)
}

// TestDestroyAllAfterKill9: habench is killed with SIGKILL in the middle of a scenario
// run; its servers survive it, and `destroy --all` removes every process, namespace and
// directory from the state file alone.
func TestDestroyAllAfterKill9(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	f := filepath.Join(t.TempDir(), "s.yaml")
	ck1 := testenv.Name(t, "ck1")
	os.WriteFile(f, []byte(`name: kill
topologies:
  - name: `+ck1+`
    kind: async
    nodes: 3
    flavor: mariadb
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, threads: 2, time: 60, report-interval: 1}
`), 0o644)
	cmd := exec.Command(habenchBin, "run", f, "--results", t.TempDir())
	cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	var out syncBuffer // read while the run writes it
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the run phase has started (interval lines appear).
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(out.String(), "[ 2s ]") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run did not start within 2 minutes:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	s := &cluster.Store{StateDir: state}
	c, err := s.Load(ck1)
	if err != nil {
		t.Fatalf("state after kill -9: %v", err)
	}
	alive := 0
	for _, n := range c.Nodes {
		if n.Running() {
			alive++
		}
	}
	if alive != 3 {
		t.Errorf("%d of 3 servers alive after habench was killed (the test needs them alive to mean anything)", alive)
	}
	r := habench(t, state, "destroy", "--all")
	if r.code != 0 {
		t.Fatalf("destroy --all: %d %s", r.code, r.stderr)
	}
	noClusters(t, state, ck1)
}

// TestSysbenchAgainstPlainServer: with sysbench's own connection flags habench works
// against any server (here a throwaway MariaDB on 127.0.0.1), prepare to cleanup.
func TestSysbenchAgainstPlainServer(t *testing.T) {
	t.Parallel()
	srv := testserver.StartMariaDB(t)
	state := stateDir(t)
	conn := []string{"--mysql-host", "127.0.0.1", "--mysql-port", strconv.Itoa(srv.Port), "--mysql-user", "root", "--mysql-db", "plain"}
	for _, step := range [][]string{
		{"prepare", "--tables", "1", "--table-size", "500"},
		{"run", "--tables", "1", "--table-size", "500", "--threads", "2", "--time", "2", "--results", t.TempDir()},
		{"cleanup", "--tables", "1"},
	} {
		args := append(append([]string{"sysbench", "oltp_read_only", step[0]}, conn...), step[1:]...)
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		if step[0] == "run" && !strings.Contains(r.stdout, "transactions:") {
			t.Errorf("run output:\n%s", r.stdout)
		}
	}
	var n int
	srv.Open(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='plain'").Scan(&n)
	if n != 0 {
		t.Errorf("cleanup left %d tables", n)
	}
}

// TestRunScenario runs a small scenario across both flavors and kinds and checks the
// comparison it writes.
func TestRunScenario(t *testing.T) {
	testmachine.Alone(t) // it measures round trips or timing: nothing else may load the machine
	testenv.Installation(t, topology.MariaDB)
	testenv.Installation(t, topology.MySQL)
	state := stateDir(t)
	f := filepath.Join(t.TempDir(), "s.yaml")
	rsingle, rsemi := testenv.Name(t, "rsingle"), testenv.Name(t, "rsemi")
	// As root (nodes in namespaces) the scenario also impairs one direction of one link.
	links := ""
	if os.Geteuid() == 0 {
		links = "links:\n  link: {n1->n2: 2ms}\n"
	}
	os.WriteFile(f, []byte(`name: mini
baseline: `+rsingle+`
`+links+`topologies:
  - {name: `+rsingle+`, kind: single, flavor: mariadb}
  - {name: `+rsemi+`, kind: semisync, nodes: 2, flavor: mysql}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, threads: 2, time: 3, report-interval: 1}
`), 0o644)
	results := t.TempDir()
	r := habench(t, state, "run", f, "--results", results)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cmp, err := filepath.Glob(filepath.Join(results, "*-mini", "comparison.md"))
	if err != nil || len(cmp) != 1 {
		t.Fatalf("comparison.md: %v %v", cmp, err)
	}
	b, _ := os.ReadFile(cmp[0])
	for _, w := range []string{"| " + rsingle + " | single | mariadb | 10.", "| " + rsemi + " | semisync | mysql | 9.", "100.0%"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("comparison lacks %q:\n%s", w, b)
		}
	}
	if !strings.Contains(r.stdout, "results: "+filepath.Dir(cmp[0])) {
		t.Errorf("run does not print the results path")
	}
	semi, _ := filepath.Glob(filepath.Join(filepath.Dir(cmp[0]), "*-"+rsemi, "summary.json"))
	if len(semi) != 1 {
		t.Fatalf("semi-sync run's summary.json: %v", semi)
	}
	var ss struct {
		Transactions int64 `json:"transactions"`
		SemiSync     *struct {
			YesTx      float64 `json:"yes_tx"`
			NoTx       float64 `json:"no_tx"`
			SecondsOff int     `json:"seconds_off"`
		} `json:"semisync"`
	}
	b, _ = os.ReadFile(semi[0])
	json.Unmarshal(b, &ss)
	// Every transaction was acknowledged (plus heartbeat writes), none fell back to async.
	if ss.SemiSync == nil || ss.SemiSync.YesTx < float64(ss.Transactions) || ss.SemiSync.NoTx != 0 || ss.SemiSync.SecondsOff != 0 {
		t.Errorf("semi-sync summary %+v for %d transactions; the run's warnings:\n%s", ss.SemiSync, ss.Transactions, warningLines(r.stdout))
	}
	if links != "" {
		var m struct {
			Links struct {
				Impairment struct {
					Links map[string]string `json:"links"`
					RTT   []struct {
						Link        string  `json:"link"`
						RequestedMs float64 `json:"requested_ms"`
						AddedMs     float64 `json:"added_ms"`
					} `json:"rtt"`
				} `json:"impairment"`
			} `json:"links"`
		}
		b, _ = os.ReadFile(filepath.Join(filepath.Dir(semi[0]), "manifest.json"))
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		imp := m.Links.Impairment
		if len(imp.Links) != 1 || imp.Links["n1->n2"] != "delay 2ms" || len(imp.RTT) != 2 {
			t.Fatalf("scenario links in the manifest: %+v", imp)
		}
		for _, r := range imp.RTT {
			if r.RequestedMs != 2 || r.AddedMs < 1.6 || r.AddedMs > 4 {
				t.Errorf("%s: requested +%.3f ms, added %.3f ms; want +2 ms (one direction delayed)", r.Link, r.RequestedMs, r.AddedMs)
			}
		}
	}
	noClusters(t, state, rsingle, rsemi)
}

// TestDestroyRefusesPathsAndBadNames: destroy takes cluster names only; a path-like or
// empty name is bad input (exit 2) and deletes nothing.
func TestDestroyRefusesPathsAndBadNames(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	victim := filepath.Join(filepath.Dir(state), filepath.Base(state)+"-victim")
	os.MkdirAll(filepath.Join(victim, "sub"), 0o755)
	defer os.RemoveAll(victim)
	os.MkdirAll(filepath.Join(state, "clusters"), 0o755)
	for _, name := range []string{"../../" + filepath.Base(victim), "", "..", "a/b"} {
		r := habench(t, state, "destroy", name)
		if r.code != 2 || !strings.Contains(r.stderr, "name") {
			t.Errorf("destroy %q: exit %d %q, want 2 naming the name", name, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "sub")); err != nil {
		t.Fatalf("destroy deleted a directory outside the state dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "clusters")); err != nil {
		t.Fatalf("destroy \"\" removed the clusters directory: %v", err)
	}
}

// TestNotReadyClusterRefused: a cluster whose deploy never finished (habench killed) is
// refused by sysbench with exit 2 instead of being used half-built.
func TestNotReadyClusterRefused(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	name := testenv.Name(t, "cnr")
	dir := filepath.Join(state, "clusters", name)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"name":"`+name+`","provider":"sandbox","state":"deploying","nodes":[{"name":"n1"}]}`), 0o644)
	r := habench(t, state, "sysbench", "oltp_read_write", "run", "--cluster", name, "--time", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "deploying") || strings.Contains(r.stderr, "panic") {
		t.Errorf("exit %d stderr %q, want 2 saying the cluster is deploying", r.code, r.stderr)
	}
	if r := habench(t, state, "destroy", name); r.code != 0 {
		t.Errorf("destroy of the half-deployed cluster: %d %s", r.code, r.stderr)
	}
}

// TestNonRootUsesLoopback runs habench as an unprivileged user (nobody): it cannot create
// namespaces, so the sandbox falls back to loopback ports and replication still works.
func TestNonRootUsesLoopback(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	prereq.Root(t, "switching to an unprivileged user needs root")
	if _, err := exec.LookPath("setpriv"); err != nil {
		prereq.Missing(t, "setpriv (util-linux) missing")
	}
	dir, err := os.MkdirTemp("", "hbnonroot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	bin := filepath.Join(dir, "habench")
	b, _ := os.ReadFile(habenchBin)
	os.WriteFile(bin, b, 0o755)
	port := testserver.LoopbackPorts(t, 2)
	name := testenv.Name(t, "cnb")
	run := func(args ...string) result {
		return execute(t, append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=" + dir,
			"HABENCH_STATE_DIR=" + filepath.Join(dir, "state"), "HABENCH_CACHE_DIR=" + filepath.Join(dir, "cache"), bin}, args...))
	}
	defer run("destroy", "--all")
	r := run("deploy", "--name", name, "--kind", "async", "--nodes", "2", "--base-port", strconv.Itoa(port))
	if r.code != 0 {
		t.Fatalf("deploy as nobody: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "127.0.0.1:"+strconv.Itoa(port+1)) {
		t.Errorf("non-root deploy is not on loopback ports:\n%s", r.stdout)
	}
	st := run("status", name)
	if !strings.Contains(st.stdout, "io=Yes sql=Yes") {
		t.Errorf("replica not healthy:\n%s%s", st.stdout, st.stderr)
	}
	if r := run("destroy", name); r.code != 0 {
		t.Errorf("destroy as nobody: %d %s", r.code, r.stderr)
	}
	if out, _ := exec.Command("pgrep", "-f", dir).Output(); len(out) > 0 {
		t.Errorf("processes left: %s", out)
	}
}

// warningLines are out's WARNING lines, for a failure's message.
func warningLines(out string) string {
	var ws []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "WARNING") {
			ws = append(ws, l)
		}
	}
	return strings.Join(ws, "\n")
}
