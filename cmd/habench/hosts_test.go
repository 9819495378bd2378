package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/schema"
)

// hostState is what a test compares on a lab host before and after habench: the
// processes whose command line names the host directory, the listening TCP ports, the
// qdiscs, and whether the host directory exists.
func hostState(t *testing.T, h *testhost.Host, hostDir string) string {
	t.Helper()
	// The lab's hosts share this machine's process table: read it here.
	var procs []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), hostDir+"/") {
			procs = append(procs, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	ports := strings.Fields(h.Run(t, "sh", "-c", `ss -Htln | awk '{print $4}' | sort`))
	_, err := os.Stat(hostDir)
	return fmt.Sprintf("processes under %s: %q\nlistening: %v\nhost dir exists: %v\n%s", hostDir, procs, ports, err == nil, h.TCState(t))
}

// TestDeployOnHosts (habench deploy --hosts): a semisync MariaDB cluster of 3 nodes on 3
// lab hosts (network namespaces with sshd, reached by ssh_config Host aliases) deploys
// with the hosts' own server, status names each node's host, a short sysbench run works,
// a second deploy on a taken port and one on a node directory habench did not create are
// refused in one line without touching anything; destroy with host 1 gone says so and
// forgets n1, `destroy NAME --hosts host1` then removes n1 by its record there, and every
// host is as it was: processes, listening ports, qdiscs and the host directory. The bench
// and replication users' passwords are random for the cluster.
func TestDeployOnHosts(t *testing.T) {
	t.Parallel()
	// The hosts' bash is slow to start where a TCP probe runs (3 s in every bash whose
	// command names /dev/tcp, as a user's ~/.bashrc can be: root's on this machine takes
	// 2.5 s in every bash sshd starts without SHLVL), which made doctor's old probe call
	// every port of these working hosts filtered (issue 31).
	slow := filepath.Join(t.TempDir(), "slow-probe-shell.sh")
	if err := os.WriteFile(slow, []byte("case \"$BASH_EXECUTION_STRING\" in */dev/tcp/*) sleep 3;; esac\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lab := testhost.New(t, 3, testhost.Options{SSH: true, SSHEnv: []string{"BASH_ENV=" + slow}})
	state, hostDir, names, before := labDirs(t, lab)
	hostsArgs := []string{"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir}
	doctorAgrees(t, state, hostsArgs, names)
	start := time.Now()
	r := habench(t, state, append([]string{"--log-level", "debug", "deploy", "--name", "hhs1", "--kind", "semisync", "--nodes", "3", "--flavor", "mariadb"}, hostsArgs...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "deployed hhs1: semisync, 3 node(s)") {
		t.Fatalf("deploy --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr) // stderr: the phases at debug level
	}
	t.Logf("deploy on 3 hosts: %.1fs\n%s", time.Since(start).Seconds(), r.stdout)
	st := habench(t, state, "status", "hhs1")
	for i, h := range lab.Hosts {
		node := fmt.Sprintf("n%d", i+1)
		ok := false
		for _, l := range strings.Split(st.stdout, "\n") {
			ok = ok || (strings.HasPrefix(l, node+" ") && strings.Contains(l, h.Addr+":23306") && strings.Contains(l, "ssh "+h.Name))
		}
		if !ok {
			t.Errorf("status: no line for %s on %s at %s:23306:\n%s", node, h.Name, h.Addr, st.stdout)
		}
		rec := filepath.Join(hostDir, "hhs1", node+".habench.json")
		if b, err := os.ReadFile(rec); err != nil || !strings.Contains(string(b), `"pid"`) {
			t.Errorf("record %s: %v %s", rec, err, b)
		}
	}
	// The bench and replication users' passwords: random for this cluster, kept in the
	// state, used by the run below.
	var cs struct {
		Password     string `json:"password"`
		ReplPassword string `json:"repl_password"`
	}
	if err := json.Unmarshal(mustReadFile(t, filepath.Join(state, "clusters", "hhs1", "state.json")), &cs); err != nil ||
		len(cs.Password) != 32 || len(cs.ReplPassword) != 32 || cs.Password == cs.ReplPassword {
		t.Errorf("state.json: bench password %q, repl password %q (%v): want two random ones", cs.Password, cs.ReplPassword, err)
	}
	opts := []string{"--tables", "1", "--table-size", "200"}
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "prepare", "--cluster", "hhs1"}, opts...)...); r.code != 0 {
		t.Errorf("sysbench prepare: exit %d\n%s", r.code, r.stderr)
	}
	res := filepath.Join(t.TempDir(), "res")
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "run", "--cluster", "hhs1", "--time", "2", "--results", res}, opts...)...); r.code != 0 {
		t.Errorf("sysbench run: exit %d\n%s", r.code, r.stderr)
	} else if sum := readJSON(t, filepath.Join(runDir(t, res), "summary.json")); sum["tps"].(float64) <= 0 {
		t.Errorf("run on hosts: tps %v", sum["tps"])
	}

	// Faults act on the process habench started on the node's host.
	for _, f := range []string{"kill", "start", "restart"} {
		if r := habench(t, state, "fault", f, "n2", "--cluster", "hhs1"); r.code != 0 {
			t.Errorf("fault %s n2: exit %d\n%s%s", f, r.code, r.stdout, r.stderr)
		}
	}

	// Refusals: one line, exit 2, nothing created, nothing touched.
	foreign := filepath.Join(hostDir, "hhs3", "n1")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		extra []string
		want  []string
	}{
		{"hhs2", nil, []string{"base_port", "port 23306 is in use on " + names[0]}},
		{"hhs3", []string{"--base-port", "24306"}, []string{"host_dir", foreign + " exists on " + names[0], "did not create it"}},
	} {
		r := habench(t, state, append(append([]string{"deploy", "--name", c.name, "--kind", "async", "--nodes", "2"}, hostsArgs...), c.extra...)...)
		line := strings.TrimSpace(r.stderr)
		ok := r.code == 2 && !strings.Contains(line, "\n")
		for _, w := range c.want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			t.Errorf("deploy %s: exit %d, stderr %q; want exit 2 and one line with %q", c.name, r.code, line, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(hostDir, "hhs2")); err == nil {
		t.Errorf("a refused deploy created %s", filepath.Join(hostDir, "hhs2"))
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("a refused deploy removed a directory it did not create: %v", err)
	}
	os.RemoveAll(filepath.Join(hostDir, "hhs3"))

	destroyWithHostGone(t, lab, state, hostDir, before)
}

// doctorAgrees: `doctor --hosts` on the hosts a deploy then uses says each is usable
// (exit 0, no UNUSABLE line, each reaches the other two on every port) and, at debug
// level, logs every probe with its result (refused: nothing listens there yet).
func doctorAgrees(t *testing.T, state string, hostsArgs, names []string) {
	t.Helper()
	start := time.Now()
	d := habench(t, state, append([]string{"--log-level", "debug", "doctor"}, hostsArgs...)...)
	t.Logf("doctor --hosts before the deploy: exit %d in %.1f s\n%s", d.code, time.Since(start).Seconds(), d.stdout)
	if d.code != 0 || strings.Contains(d.stdout, "UNUSABLE") {
		t.Errorf("doctor --hosts on the hosts the deploy uses: exit %d, want 0 and no UNUSABLE\n%s%s", d.code, d.stdout, d.stderr)
	}
	for _, n := range names {
		if line := doctorLine(d.stdout, n); !strings.Contains(line, "reaches the other 2 host(s)") {
			t.Errorf("doctor: %s's line %q", n, line)
		}
	}
	probes := strings.Count(d.stderr, `msg="doctor: probe" `)
	if refused := strings.Count(d.stderr, "result=refused"); probes < 3*2*19 || refused != probes {
		t.Errorf("doctor --log-level debug: %d probes logged, %d refused; want every probe (3 hosts x 2 peers x 19 ports), refused\n%s", probes, refused, d.stderr)
	}
}

// destroyWithHostGone destroys cluster hhs1 of TestDeployOnHosts with host 1 gone (its
// destination in the state replaced by an address nobody has): destroy says so on its
// output and forgets n1; once host 1 is back, destroy --hosts removes n1 there by its
// record (and the directories n1 created), and every host is as before.
func destroyWithHostGone(t *testing.T, lab *testhost.Lab, state, hostDir string, before []string) {
	t.Helper()
	names := []string{lab.Hosts[0].Name}
	statePath := filepath.Join(state, "clusters", "hhs1", "state.json")
	gone := lab.Addr(99)
	if b := mustReadFile(t, statePath); !strings.Contains(string(b), `"`+names[0]+`"`) {
		t.Fatalf("state.json does not name %s:\n%s", names[0], b)
	} else if err := os.WriteFile(statePath, []byte(strings.ReplaceAll(string(b), `"`+names[0]+`"`, `"`+gone+`"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := habench(t, state, "destroy", "hhs1")
	t.Logf("destroy with host 1 gone: exit %d\n%s", r.code, r.stdout)
	if want := "node n1: host " + gone + " unreachable: node forgotten"; r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "destroyed hhs1") {
		t.Errorf("destroy with host 1 gone: exit %d, want 0 and a line with %q:\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	if st := habench(t, state, "status"); slices.Contains(strings.Fields(st.stdout), "hhs1") {
		t.Errorf("status after destroy:\n%s", st.stdout)
	}
	r = habench(t, state, "destroy", "hhs1", "--hosts", names[0], "--ssh-config", lab.SSHConfig, "--host-dir", hostDir)
	if want := names[0] + ": removed n1 of hhs1"; r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("destroy --hosts %s: exit %d, want a line with %q:\n%s%s", names[0], r.code, want, r.stdout, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// TestDeployOnHostsKilled: on hosts that run their own MariaDB on 3306, habench is killed
// with SIGKILL in the middle of a deploy (servers started, the plan not done) and the
// state file is removed; `destroy NAME --hosts ...`, from the records on the hosts alone,
// says per host what it removed (and that a third, gone host is unreachable), and leaves
// every host as it was, the hosts' own servers running with their data.
func TestDeployOnHostsKilled(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 2, testhost.Options{SSH: true, MariaDB: true})
	for _, h := range lab.Hosts {
		db := h.DB.Open(t, "")
		for _, q := range []string{"CREATE DATABASE own", "CREATE TABLE own.t (id INT PRIMARY KEY)", "INSERT INTO own.t VALUES (7)"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	state := stateDir(t)
	hostDir := filepath.Join(t.TempDir(), "hb")
	before := make([]string, len(lab.Hosts))
	for i, h := range lab.Hosts {
		before[i] = hostState(t, h, hostDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, _, errOut := startHabench(t, ctx, state, "--log-level", "debug", "deploy", "--name", "hhk1", "--kind", "async", "--nodes", "3", "--flavor", "mariadb",
		"--hosts", lab.Hosts[0].Addr+","+lab.Hosts[1].Addr, "--ssh-identity", lab.Key, "--ssh-user", "root",
		"--ssh-option", "UserKnownHostsFile="+lab.KnownHosts, "--ssh-option", "IdentitiesOnly=yes", "--host-dir", hostDir)
	// Kill once a server runs: n3 shares host 1 with n1 (port 23307).
	deadline := time.Now().Add(120 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(hostDir, "hhk1", "n1.habench.json"))
		if strings.Contains(string(b), `"pid"`) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no server started within 120 s: %s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if mid := hostState(t, lab.Hosts[0], hostDir); mid == before[0] {
		t.Errorf("killed in the middle, yet host 1 looks untouched:\n%s", mid)
	}
	// The state file is lost too: destroy --hosts reads habench's records back from the
	// hosts (every node's was written before its directory); a third host that is gone
	// is said in one line.
	if err := os.RemoveAll(filepath.Join(state, "clusters", "hhk1")); err != nil {
		t.Fatal(err)
	}
	gone := lab.Addr(99)
	r := habench(t, state, "destroy", "hhk1", "--hosts", lab.Hosts[0].Addr+","+lab.Hosts[1].Addr+","+gone, "--ssh-identity", lab.Key, "--ssh-user", "root",
		"--ssh-option", "UserKnownHostsFile="+lab.KnownHosts, "--ssh-option", "IdentitiesOnly=yes", "--ssh-option", "ConnectTimeout=3", "--host-dir", hostDir)
	t.Logf("destroy --hosts after kill -9 and the state lost: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	// The lab's hosts share this machine's file system and process table: host 1, asked
	// first, has every node's record (n2's too), and host 2 none left.
	for _, w := range []string{lab.Hosts[0].Addr + ": removed n1, n2, n3 of hhk1", lab.Hosts[1].Addr + ": no habench record of hhk1", gone + ": unreachable, nothing removed there"} {
		if !strings.Contains(r.stdout, w+" ") {
			t.Errorf("destroy --hosts: no line %q", w)
		}
	}
	if r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), "\n") != 2 || strings.Contains(r.stdout, "kept") {
		t.Errorf("destroy --hosts: exit %d, want 0 and one line per host", r.code)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
	for _, h := range lab.Hosts {
		var id int
		if err := h.DB.Open(t, "").QueryRow("SELECT id FROM own.t").Scan(&id); err != nil || id != 7 {
			t.Errorf("%s: the host's own server after deploy and destroy: id %d, %v", h.Name, id, err)
		}
	}
	if st := habench(t, state, "status"); slices.Contains(strings.Fields(st.stdout), "hhk1") {
		t.Errorf("status after destroy:\n%s", st.stdout)
	}
}

// TestScenarioOnHosts (habench run SCENARIO --hosts): a scenario written for local
// sandboxes (single and async, cell: {drop_caches: true}) runs each topology in turn on
// two lab hosts, and leaves them as they were; each cell's manifest and reports name its
// hosts with their clock offsets and page cache drops (checkHostClocks); a bad row there
// (a multi-primary group-dr) is refused in one line naming the row, and so are, by
// pre-checks that ask the hosts, a server the hosts lack (naming the host) and a knob
// name their server does not know.
func TestScenarioOnHosts(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 2, testhost.Options{SSH: true})
	state := stateDir(t)
	hostDir := filepath.Join(t.TempDir(), "hb")
	before := make([]string, len(lab.Hosts))
	for i, h := range lab.Hosts {
		before[i] = hostState(t, h, hostDir)
	}
	scenario := func(rows string) string {
		f := filepath.Join(t.TempDir(), "hosts.yaml")
		y := "name: hostsq\nbaseline: hhq1\ntopologies:\n" + rows +
			"workload:\n  test: oltp_read_write\n  options:\n    tables: 1\n    table-size: 200\n    threads: 2\n    time: 2\n" +
			"cell: {drop_caches: true}\n"
		if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	hosts := []string{"--hosts", lab.Hosts[0].Name + "," + lab.Hosts[1].Name, "--ssh-config", lab.SSHConfig, "--host-dir", hostDir}
	rows := "  - {name: hhq1, kind: single, flavor: mariadb}\n  - {name: hhq2, kind: async, nodes: 2, flavor: mariadb}\n"
	res := filepath.Join(t.TempDir(), "res")
	r := habench(t, state, append([]string{"run", scenario(rows), "--results", res, "--quiet"}, hosts...)...)
	if r.code != 0 || strings.Count(r.stdout, "deployed in") != 2 {
		t.Fatalf("run --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after the scenario:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
	// Each cell's manifest and reports: its hosts with their clocks, its page cache drops.
	for row, n := range map[string]int{"hhq1": 1, "hhq2": 2} {
		dirs, _ := filepath.Glob(filepath.Join(res, "*", "*-c0*-"+row))
		if len(dirs) != 1 {
			t.Fatalf("run directories of %s: %q", row, dirs)
		}
		var names []string
		for _, h := range lab.Hosts[:n] {
			names = append(names, h.Name)
		}
		checkHostClocks(t, dirs[0], names)
	}
	r = habench(t, state, append([]string{"run", scenario(rows + "  - {name: hhq3, kind: group-dr, flavor: mysql, group: {mode: multi-primary}}\n"), "--results", res, "--quiet"}, hosts...)...)
	if line := strings.TrimSpace(r.stderr); r.code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, "topologies[2]") || !strings.Contains(line, "group.mode") || !strings.Contains(line, "group-dr") {
		t.Errorf("run --hosts with a multi-primary group-dr row: exit %d, stderr %q", r.code, line)
	}
	// The pre-checks ask the hosts: a server the hosts lack is refused naming the host,
	// a knob name the hosts' server does not know naming the closest; nothing deployed.
	for _, c := range []struct{ row, want string }{
		{"  - {name: hhq4, kind: single, flavor: mariadb, installation: {kind: basedir, path: /nonexistent-s18}}\n", "hosts[0] " + lab.Hosts[0].Name},
		{"  - {name: hhq5, kind: single, flavor: mariadb, knobs: {innodb_flush_log_at_trx_comit: \"2\"}}\n", "innodb_flush_log_at_trx_commit"},
	} {
		r = habench(t, state, append([]string{"run", scenario(rows + c.row), "--results", res, "--quiet"}, hosts...)...)
		if line := strings.TrimSpace(r.stderr); r.code == 0 || strings.Contains(line, "\n") || !strings.Contains(line, c.want) || strings.Contains(r.stdout, "deployed in") {
			t.Errorf("run --hosts with %s: exit %d, stderr %q; want one line with %q, nothing deployed", strings.TrimSpace(c.row), r.code, line, c.want)
		} else {
			t.Logf("refused: %s", line)
		}
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after the refused scenarios:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// checkHostClocks checks the run directory of a cell run on lab hosts with cell:
// {drop_caches: true}: its manifest lists its hosts (labHosts, in node order, node i on
// host i) with their nodes, the server, and a clock offset of about 0 (the lab's hosts
// share this machine's clock) within its uncertainty; each host's page cache was dropped
// before the cell and recorded; the run's report.md and the scenario's name the hosts
// with their offsets and the drops.
func checkHostClocks(t *testing.T, dir string, labHosts []string) {
	t.Helper()
	var m struct {
		Hosts []struct {
			Name          string   `json:"name"`
			Nodes         []string `json:"nodes"`
			OffsetMs      *float64 `json:"offset_ms"`
			UncertaintyMs *float64 `json:"uncertainty_ms"`
			Server        string   `json:"server"`
		} `json:"hosts"`
		Drops []struct {
			Host  string   `json:"host"`
			Nodes []string `json:"nodes"`
		} `json:"drop_caches"`
	}
	if err := json.Unmarshal(mustReadFile(t, filepath.Join(dir, "manifest.json")), &m); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if len(m.Hosts) != len(labHosts) || len(m.Drops) != len(labHosts) {
		t.Fatalf("%s: manifest hosts %+v, drop_caches %+v, want %d of each", dir, m.Hosts, m.Drops, len(labHosts))
	}
	runMD := string(mustReadFile(t, filepath.Join(dir, "report.md")))
	sweepMD := string(mustReadFile(t, filepath.Join(filepath.Dir(dir), "report.md")))
	for i, h := range m.Hosts {
		node := fmt.Sprintf("n%d", i+1)
		if !strings.Contains(h.Name, labHosts[i]) || !slices.Equal(h.Nodes, []string{node}) || !strings.Contains(h.Server, "mariadbd") {
			t.Errorf("host %d: %+v", i, h)
		}
		if h.OffsetMs == nil || h.UncertaintyMs == nil || *h.UncertaintyMs <= 0 || *h.UncertaintyMs > 50 || math.Abs(*h.OffsetMs) > *h.UncertaintyMs+1 {
			t.Errorf("host %s: offset %v ± %v ms, want about 0 (one clock)", h.Name, h.OffsetMs, h.UncertaintyMs)
		} else {
			t.Logf("%s: host %s: clock %+.3f ± %.3f ms", filepath.Base(dir), h.Name, *h.OffsetMs, *h.UncertaintyMs)
		}
		if d := m.Drops[i]; d.Host != h.Name || !slices.Equal(d.Nodes, []string{node}) {
			t.Errorf("drop_caches %d: %+v, want host %s", i, d, h.Name)
		}
		for what, md := range map[string]string{"run report.md": runMD, "scenario report.md": sweepMD} {
			if want := fmt.Sprintf("%s (%s): clock ", h.Name, node); !strings.Contains(md, "- hosts: ") || !strings.Contains(md, want) {
				t.Errorf("%s lacks the hosts line with %q", what, want)
			}
		}
	}
	if !strings.Contains(runMD, "- page cache: dropped before the run") || !strings.Contains(sweepMD, "- page cache: dropped before the run") {
		t.Errorf("%s: a report lacks the page cache line", dir)
	}
}

// TestGaleraOnHosts (habench deploy --kind galera --hosts): a 3-node MariaDB Galera
// cluster on 3 lab hosts, one node each (standard Galera ports on the host's address),
// is healthy after the deploy (every node Synced in a Primary component of 3), a node
// stopped while the others take writes rejoins by IST when started again, and destroy
// leaves every host as it was (processes, including SST helpers, ports, qdiscs, the
// host directory). Between the deploy and the stop, a wsrep_slave_threads sweep on the
// cluster runs from two more lab hosts as clients (clientsSweepOnCluster), which are as
// they were after it.
func TestGaleraOnHosts(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 5, testhost.Options{SSH: true})
	state, hostDir, names, before := labDirs(t, lab)
	clientNames := names[3:]
	names = names[:3]
	t.Cleanup(func() { host.CloseMatching(func(d string) bool { return slices.Contains(clientNames, d) }) })
	start := time.Now()
	r := habench(t, state, "--log-level", "debug", "deploy", "--name", "h2g1", "--kind", "galera", "--nodes", "3", "--flavor", "mariadb",
		"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir)
	if r.code != 0 {
		t.Fatalf("deploy galera --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("galera deploy on 3 hosts: %.1fs", time.Since(start).Seconds())
	synced := func(when string) {
		t.Helper()
		nodesOnHostsHealthy(t, state, "h2g1", lab.Hosts[:3], "Synced, Primary, cluster size 3", when)
	}
	synced("after deploy")
	want := "wsrep_node_address=" + lab.Hosts[1].Addr + ":4567\n"
	if b, err := os.ReadFile(filepath.Join(hostDir, "h2g1", "n2", "my.cnf")); err != nil || !strings.Contains(string(b), want) {
		t.Errorf("n2's my.cnf: want %q: %v\n%s", want, err, b)
	}

	clientsSweepOnCluster(t, state, "h2g1", lab.SSHConfig, clientNames)

	// n2 stops; writes on the others; n2 starts and catches up by IST.
	if r := habench(t, state, "fault", "stop", "n2", "--cluster", "h2g1"); r.code != 0 {
		t.Fatalf("fault stop n2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := habench(t, state, "sysbench", "oltp_read_write", "prepare", "--cluster", "h2g1", "--tables", "1", "--table-size", "100"); r.code != 0 {
		t.Errorf("sysbench prepare with n2 stopped: exit %d\n%s", r.code, r.stderr)
	}
	t0 := time.Now()
	if r := habench(t, state, "fault", "start", "n2", "--cluster", "h2g1"); r.code != 0 {
		t.Fatalf("fault start n2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("n2 rejoined in %.1fs", time.Since(t0).Seconds())
	synced("after n2 rejoined")
	if b, _ := os.ReadFile(filepath.Join(hostDir, "h2g1", "n2", "error.log")); !strings.Contains(string(b), "IST received") {
		t.Errorf("n2 did not rejoin by IST: no \"IST received\" in its error log")
	}

	if r := habench(t, state, "destroy", "h2g1"); r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s", r.code, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// TestGaleraOnHostsKilled: a 3-node Galera cluster on 2 lab hosts (n1 and n3 share host
// 1, so every node listens on its SQL port + 10000/20000/30000) is deployed until n3's
// state transfer runs (its rsync daemon, a child of its server, listening on 53307);
// habench is killed with SIGKILL there, and destroy, from the state file and the hosts'
// records, leaves every host as it was: servers, SST scripts and rsync daemons gone,
// ports free, the host directory removed.
func TestGaleraOnHostsKilled(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 2, testhost.Options{SSH: true})
	state := stateDir(t)
	hostDir := filepath.Join(t.TempDir(), "hb")
	before := make([]string, len(lab.Hosts))
	for i, h := range lab.Hosts {
		before[i] = hostState(t, h, hostDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, _, errOut := startHabench(t, ctx, state, "--log-level", "debug", "deploy", "--name", "h2k1", "--kind", "galera", "--nodes", "3", "--flavor", "mariadb",
		"--hosts", lab.Hosts[0].Name+","+lab.Hosts[1].Name, "--ssh-config", lab.SSHConfig, "--host-dir", hostDir)
	// n3's joiner rsync daemon: its --config names n3's datadir.
	n3 := filepath.Join(hostDir, "h2k1", "n3") + "/"
	sstRunning := func() bool {
		files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "rsync") && strings.Contains(string(b), n3) && strings.Contains(string(b), "rsync_sst.conf") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(100 * time.Second); !sstRunning(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("n3's rsync daemon never ran within 100 s: %s", errOut.String())
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if b, err := os.ReadFile(filepath.Join(n3, "my.cnf")); err != nil || !strings.Contains(string(b), "wsrep_sst_receive_address="+lab.Hosts[0].Addr+":53307\n") {
		t.Errorf("n3 (second node on host 1): want wsrep_sst_receive_address %s:53307: %v\n%s", lab.Hosts[0].Addr, err, b)
	}
	if r := habench(t, state, "destroy", "h2k1"); r.code != 0 {
		t.Fatalf("destroy after kill -9: exit %d\n%s", r.code, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// TestGroupOnHosts (habench deploy --kind group --group-mode multi-primary --flavor mysql
// --hosts): a multi-primary group of 3 MySQL members on 3 lab hosts, the server from the
// MySQL root filesystem on the hosts (chroot; node directories under ROOT/HOST_DIR), is
// healthy after the deploy (every member ONLINE PRIMARY, status says multi-primary mode),
// a member stopped and started again is ONLINE PRIMARY again, and so is a member rebuilt
// by clone (fault rebuild on hosts) and every member after a large transaction (its 5000
// rows on every member) and a rolling restart (the faults log has each member's restart,
// the writer n1 last; every member's server started since), and destroy leaves every
// host as it was. (A single-primary group on hosts: TestGroupDROnHosts.)
func TestGroupOnHosts(t *testing.T) {
	t.Parallel()
	l := newRootfsHostsLab(t, 3, "h2gr")
	lab, state, root, hostDir, names, before, snapshot := l.lab, l.state, l.root, l.hostDir, l.names, l.before, l.snapshot
	start := time.Now()
	r := habench(t, state, "--log-level", "debug", "deploy", "--name", "h2r1", "--kind", "group", "--group-mode", "multi-primary", "--nodes", "3", "--flavor", "mysql", "--installation", "rootfs:"+root,
		"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir)
	if r.code != 0 {
		t.Fatalf("deploy group --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("group deploy on 3 hosts: %.1fs", time.Since(start).Seconds())
	online := func(when string) {
		t.Helper()
		nodesOnHostsHealthy(t, state, "h2r1", lab.Hosts, "ONLINE PRIMARY", when)
		if st := habench(t, state, "status", "h2r1"); !strings.Contains(st.stdout, "multi-primary mode, 3/3 members ONLINE") {
			t.Errorf("%s: status lacks the multi-primary group line:\n%s", when, st.stdout)
		}
	}
	online("after deploy")
	if _, err := os.Stat(filepath.Join(root+hostDir, "h2r1", "n2", "data")); err != nil {
		t.Errorf("n2's datadir under the root filesystem: %v", err)
	}
	for _, f := range []string{"stop", "start"} {
		if r := habench(t, state, "fault", f, "n3", "--cluster", "h2r1"); r.code != 0 {
			t.Fatalf("fault %s n3: exit %d\n%s%s", f, r.code, r.stdout, r.stderr)
		}
	}
	online("after n3 stopped and started")
	// A member's rebuild needs only SQL and a start: on hosts too (clone from a member).
	if r := habench(t, state, "fault", "rebuild", "n3", "--cluster", "h2r1"); r.code != 0 || !strings.Contains(r.stdout, "cloned from") {
		t.Fatalf("fault rebuild n3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	} else {
		t.Logf("rebuild n3 on its host: %s", strings.TrimSpace(r.stdout))
	}
	online("after n3 was rebuilt by clone")
	// The other disruptions on hosts, as the members and the faults log say: a large
	// transaction on the writer (its rows on every member), a rolling restart (a
	// multi-primary group: every member in turn, the writer last, no switchover; every
	// member's server started since).
	faultsBefore := len(faultsLog(t, state, "h2r1"))
	var rolled time.Time
	for _, args := range [][]string{{"large-transaction", "writer", "rows=5000"}, {"rolling-restart", "writer"}} {
		if args[0] == "rolling-restart" {
			rolled = time.Now()
		}
		r := habench(t, state, append(append([]string{"fault"}, args...), "--cluster", "h2r1")...)
		if r.code != 0 {
			t.Fatalf("fault %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		t.Logf("fault %s on hosts: %s", strings.Join(args, " "), strings.TrimSpace(r.stdout))
	}
	since := time.Since(rolled)
	var got []string
	for _, f := range faultsLog(t, state, "h2r1")[faultsBefore:] {
		d := f.Action + " " + f.Node
		if f.Outcome != "" {
			d += fmt.Sprintf(" %s %d rows", f.Outcome, f.Rows)
		}
		if f.Of != "" {
			d += " of " + f.Of
		}
		if f.Error != "" {
			d += " error: " + f.Error
		}
		got = append(got, d)
	}
	// The writer of a multi-primary group is n1 (the first member), so n1 last.
	want := []string{"large-transaction n1 ok 5000 rows", "restart n2 of rolling-restart", "restart n3 of rolling-restart",
		"restart n1 of rolling-restart", "rolling-restart n1"}
	if !slices.Equal(got, want) {
		t.Errorf("faults log after the large transaction and the rolling restart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c, err := (&cluster.Store{StateDir: state}).Load("h2r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		rows, uptime := memberRowsAndUptime(t, c, n, "sbtest.habench_large_trx", 5000)
		if rows != 5000 {
			t.Errorf("%s: %d rows in sbtest.habench_large_trx, want the large transaction's 5000", n.Name, rows)
		}
		if uptime < 0 || uptime > since {
			t.Errorf("%s: server up for %s, want started by the rolling restart %s ago", n.Name, uptime, since.Round(time.Second))
		}
	}
	online("after a large transaction and a rolling restart")
	// A chrooted process under n2's directory that no record names (as a server started
	// just before habench was killed would be): destroy finds it by its root and path.
	stray := exec.Command("chroot", root, "sh", "-c", "sleep 300", filepath.Join(hostDir, "h2r1", "n2", "stray"))
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stray.Process.Kill(); stray.Wait() })
	if r := habench(t, state, "destroy", "h2r1"); r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s", r.code, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := snapshot(h); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// isMemberLine reports whether l is member node's line of a status table: its first
// column, or its second after the SITE column of a topology with sites.
func isMemberLine(l, node string) bool {
	f := strings.Fields(l)
	return len(f) > 1 && (f[0] == node || f[1] == node)
}

// nodesOnHostsHealthy checks `habench status name`: node ni runs on hosts[i-1] (its ssh
// host in the HOST column) with health on its line; when says at which step of the test.
func nodesOnHostsHealthy(t *testing.T, state, name string, hosts []*testhost.Host, health, when string) {
	t.Helper()
	st := habench(t, state, "status", name)
	for i, h := range hosts {
		ok := false
		for _, l := range strings.Split(st.stdout, "\n") {
			ok = ok || (isMemberLine(l, fmt.Sprintf("n%d", i+1)) && strings.Contains(l, "ssh "+h.Name) && strings.Contains(l, health))
		}
		if !ok {
			t.Errorf("%s: n%d on %s lacks %q:\n%s", when, i+1, h.Name, health, st.stdout)
		}
	}
}

// rootfsHostsLab is the setup of the group tests on hosts: n lab hosts, the
// MySQL root filesystem as the hosts' server, a host directory (prefix-PID, as the
// chrooted servers see it, under the root filesystem; removed at the end), and each
// host's state before the deploy (snapshot: hostState plus whether ROOT/HOST_DIR exists).
type rootfsLab struct {
	lab      *testhost.Lab
	state    string
	root     string
	hostDir  string
	names    []string
	before   []string
	snapshot func(*testhost.Host) string
}

// labDirs are a fresh state directory and host directory for a test on lab, the lab's
// host names and each host's state before anything was deployed (hostState).
func labDirs(t *testing.T, lab *testhost.Lab) (state, hostDir string, names, before []string) {
	t.Helper()
	state, hostDir = stateDir(t), filepath.Join(t.TempDir(), "hb")
	for _, h := range lab.Hosts {
		names = append(names, h.Name)
		before = append(before, hostState(t, h, hostDir))
	}
	return state, hostDir, names, before
}

func newRootfsHostsLab(t *testing.T, n int, prefix string) *rootfsLab {
	t.Helper()
	l := &rootfsLab{root: "/var/cache/habench/rootfs/mysql-sid"}
	if _, err := os.Stat(l.root + "/usr/sbin/mysqld"); err != nil {
		prereq.Missing(t, "no MySQL root filesystem: %v", err)
	}
	l.lab = testhost.New(t, n, testhost.Options{SSH: true})
	l.state = stateDir(t)
	l.hostDir = fmt.Sprintf("/tmp/%s-%d", prefix, os.Getpid())
	t.Cleanup(func() { os.RemoveAll(l.root + l.hostDir) })
	l.snapshot = func(h *testhost.Host) string {
		_, err := os.Stat(l.root + l.hostDir)
		return hostState(t, h, l.hostDir) + fmt.Sprintf("%s exists: %v\n", l.root+l.hostDir, err == nil)
	}
	for _, h := range l.lab.Hosts {
		l.names = append(l.names, h.Name)
		l.before = append(l.before, l.snapshot(h))
	}
	return l
}

// faultsLog returns cluster name's faults log (experiment.FaultsFile) in state; none when
// there is none yet.
func faultsLog(t *testing.T, state, name string) []schema.FaultRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "clusters", name, experiment.FaultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.FaultRecord
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r schema.FaultRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s's faults log: %q: %v", name, l, err)
		}
		out = append(out, r)
	}
	return out
}

// memberRowsAndUptime asks member n of c for the rows of table, waiting up to 30 s for
// want of them (the member applies what the group certified), and for its server's
// Uptime; -1 for what it could not say (the error is logged).
func memberRowsAndUptime(t *testing.T, c *cluster.Cluster, n *cluster.Node, table string, want int64) (int64, time.Duration) {
	t.Helper()
	db, err := c.OpenAdmin(n)
	if err != nil {
		t.Logf("%s: %v", n.Name, err)
		return -1, -1
	}
	defer db.Close()
	rows := int64(-1)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err = db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&rows)
		if (err == nil && rows == want) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Logf("%s: count %s: %v", n.Name, table, err)
	}
	var up int64
	if err := db.QueryRow("SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'").Scan(&up); err != nil {
		t.Logf("%s: Uptime: %v", n.Name, err)
		return rows, -1
	}
	return rows, time.Duration(up) * time.Second
}
