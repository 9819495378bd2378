package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/clients"
	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/internal/testserver"
)

// nsClientRuns returns the `habench client-run` processes in network namespace ns.
func nsClientRuns(t *testing.T, ns string) []string {
	return testhost.ProcessesIn(t, ns, "client-run")
}

// copyLogRE matches the debug line of a copy of habench made on a client (--log-level
// debug), its directory the submatch.
var copyLogRE = regexp.MustCompile(`msg="habench copied to a client" client=\S+ dir=(\S+)`)

// copiesIn returns the directories the copies of habench were made in by a run whose
// standard error (with --log-level debug) is stderr: this run's, whatever other tests copy
// to their lab hosts (all of which share this machine's /tmp).
func copiesIn(stderr string) []string {
	var dirs []string
	for _, m := range copyLogRE.FindAllStringSubmatch(stderr, -1) {
		dirs = append(dirs, m[1])
	}
	return dirs
}

// existing returns those of dirs that exist.
func existing(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// errLines are stderr's lines that are not log lines (slog's text lines begin "time=").
func errLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "time=") {
			out = append(out, l)
		}
	}
	return out
}

// removeCopies removes dirs (a failed test's copies) when the test ends.
func removeCopies(t *testing.T, dirs []string) {
	t.Cleanup(func() {
		for _, d := range dirs {
			if strings.HasPrefix(d, "/tmp/"+clients.CopyDirPrefix) {
				_ = os.RemoveAll(d)
			}
		}
	})
}

// clientExes returns the programs (/proc/PID/exe) the client-run processes on the hosts
// run.
func clientExes(t *testing.T, names []string) []string {
	var exes []string
	for _, n := range names {
		for _, p := range nsClientRuns(t, n) {
			exe, err := os.Readlink("/proc/" + strings.SplitN(p, ":", 2)[0] + "/exe")
			if err != nil {
				exe = err.Error()
			}
			exes = append(exes, exe)
		}
	}
	return exes
}

// checkCopies fails unless every program in exes is a copy of habench in a directory made
// for the run (want of them).
func checkCopies(t *testing.T, exes []string, want int) {
	t.Helper()
	ok := len(exes) == want
	for _, e := range exes {
		ok = ok && strings.HasPrefix(e, "/tmp/"+clients.CopyDirPrefix) && filepath.Base(e) == "habench"
	}
	if !ok {
		t.Errorf("client-run programs %v: want %d, each /tmp/%s*/habench", exes, want, clients.CopyDirPrefix)
	}
}

var intoRE = regexp.MustCompile(`\((\d+)\.\d s into the run`)

var transactionsRE = regexp.MustCompile(`(?m)^\s*transactions:\s+(\d+)`)

// TestSysbenchClients: habench sysbench run --clients on two lab hosts (network
// namespaces running sshd; the namespaces share the file system) against a MariaDB in the
// first host's namespace. Refused in one line, with no client process started and no copy
// made: a client that is the server's host (without --allow-shared-client), a client twice,
// a --client-bin that is not there. The runs, without --client-bin, run a copy of the
// habench under test in a fresh /tmp/habench-client-* on each host (the client-runs'
// /proc/PID/exe, seen mid-run), none left after each run. A 3 s run at --rate 30 over 3
// threads: sysbench's output with a line per client, its transactions the server's
// Com_commit delta. A 5 s run whose second client is killed on its host: see clientKilled;
// its copy removed by the coordinator. Two 30 s runs whose coordinator is interrupted
// (SIGINT, Ctrl-C) or killed (kill -9) after its second interval: no client-run and no
// copy is left on either host within 5 s (after kill -9 the clients remove their own).
func TestSysbenchClients(t *testing.T) {
	t.Parallel()
	testhost.Require(t, testhost.Options{SSH: true})
	lab := testhost.New(t, 2, testhost.Options{SSH: true})
	names := []string{lab.Hosts[0].Name, lab.Hosts[1].Name}
	t.Cleanup(func() { host.CloseMatching(func(d string) bool { return d == names[0] || d == names[1] }) })
	s := testserver.StartMariaDBAt(t, testserver.Listen{Netns: names[0], Host: lab.Hosts[0].Addr})
	admin := s.Open(t, "")
	testserver.Exec(t, admin, "CREATE DATABASE sbtest")
	state := stateDir(t)
	server := []string{"--mysql-host", s.Host, "--mysql-port", strconv.Itoa(s.Port), "--mysql-user", "root", "--tables", "1", "--table-size", "1000"}
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "prepare"}, server...)...); r.code != 0 {
		t.Fatalf("prepare: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --log-level debug: each copy's directory is on the run's standard error.
	run := append([]string{"--log-level", "debug", "sysbench", "oltp_read_write", "run", "--client-ssh-config", lab.SSHConfig, "--threads", "3", "--rate", "30", "--report-interval", "1"}, server...)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", names[0] + "," + names[1]}, "client " + names[0] + " is also database server"},
		{[]string{"--clients", names[1] + "," + names[1]}, names[1] + " given twice"},
		{[]string{"--clients", names[1], "--client-bin", "/nonexistent/habench"}, "client " + names[1] + ": /nonexistent/habench version"},
	} {
		r := habench(t, state, append(append([]string{}, run...), c.args...)...)
		removeCopies(t, copiesIn(r.stderr))
		if el := errLines(r.stderr); r.code == 0 || len(el) != 1 || !strings.Contains(el[0], c.want) || len(copiesIn(r.stderr)) > 0 {
			t.Errorf("%v: exit %d, stderr %q: want one line with %q and no copy made", c.args, r.code, r.stderr, c.want)
		}
	}
	for _, n := range names {
		if left := nsClientRuns(t, n); len(left) > 0 {
			t.Errorf("after the refusals, on %s: %v", n, left)
		}
	}
	// Without --client-bin: a copy of habench in a fresh directory on each host, removed
	// after the run.
	ok := append(append([]string{}, run...), "--clients", names[0]+","+names[1], "--allow-shared-client")
	before := testserver.ComCounters(t, admin)
	r := habench(t, state, append(ok, "--time", "3")...)
	removeCopies(t, copiesIn(r.stderr))
	if made, left := copiesIn(r.stderr), existing(copiesIn(r.stderr)); len(made) != 2 || len(left) > 0 {
		t.Errorf("the run's copies %v: want 2, none left after the run: %v", made, left)
	}
	commits := testserver.ComCounters(t, admin)["Com_commit"] - before["Com_commit"]
	t.Logf("run --clients: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	m := transactionsRE.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || m[1] != strconv.FormatInt(commits, 10) || commits == 0 ||
		!strings.Contains(r.stdout, "Clients:") || !strings.Contains(r.stdout, names[0]) || !strings.Contains(r.stdout, names[1]) {
		t.Errorf("run --clients: exit %d, transactions %v, server's Com_commit delta %d: want them equal and a line per client", r.code, m, commits)
	}
	killedRes := t.TempDir()
	clientKilled(t, state, append(ok, "--time", "5", "--results", killedRes), names)
	lostClientResults(t, killedRes, names)
	coordinatorKilled(t, state, append(ok, "--time", "30"), names, syscall.SIGINT)
	coordinatorKilled(t, state, append(ok, "--time", "30"), names, syscall.SIGKILL)
}

// clientKilled starts habench args, kills the second host's client-run (kill -9 on the
// host) after the second interval line, and checks that the run goes on to its end and
// exits 1, naming the client lost at its last report (before 4 s into the run) and
// marking its row.
func clientKilled(t *testing.T, state string, args []string, names []string) {
	cmd := exec.Command(habenchBin, args...)
	cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	var stdout strings.Builder
	seen := 0
	for sc.Scan() {
		stdout.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "[ ") {
			if seen++; seen == 4 { // two intervals: each has a queue line with --rate
				checkCopies(t, clientExes(t, names), 2)
				for _, p := range nsClientRuns(t, names[1]) {
					pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	t.Logf("client-run on %s killed: exit %d\n%s%s", names[1], code, stdout.String(), stderr.String())
	lost := "client " + names[1] + " lost at "
	if code != 1 || !strings.Contains(stderr.String(), lost) || !strings.Contains(stdout.String(), "(lost mid-run") || !strings.Contains(stdout.String(), "[ 4s ]") {
		t.Errorf("exit %d (%v): want 1, %q in the error, the row marked, and the run on to its end", code, err, lost)
	}
	// Its session lives on without it: it is found silent 2 report intervals and 3 s after
	// its last report, and named lost at that report.
	if m := intoRE.FindStringSubmatch(stderr.String()); m == nil || m[1] > "3" || len(m[1]) > 1 {
		t.Errorf("lost %v s into the run: want its last report's time, before 4 s (its kill after 2 s)", m)
	}
	// Its copy too is gone: the coordinator removed it after the run.
	removeCopies(t, copiesIn(stderr.String()))
	if made, left := copiesIn(stderr.String()), existing(copiesIn(stderr.String())); len(made) != 2 || len(left) > 0 {
		t.Errorf("the run's copies %v: want 2, none left after the run: %v", made, left)
	}
}

// coordinatorKilled starts habench args, sends it sig (SIGINT: Ctrl-C; SIGKILL) after its
// second interval line, and checks that no client-run, and neither directory its clients
// ran their copies from, is left on the hosts within 5 s.
func coordinatorKilled(t *testing.T, state string, args []string, names []string, sig syscall.Signal) {
	cmd := exec.Command(habenchBin, args...)
	cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	seen := 0
	for seen < 2 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "[ ") {
			seen++
		}
	}
	if seen < 2 {
		t.Fatalf("the coordinator ended before its second interval")
	}
	exes := clientExes(t, names)
	running := len(exes)
	checkCopies(t, exes, 2)
	var dirs []string
	for _, e := range exes {
		dirs = append(dirs, filepath.Dir(e))
	}
	removeCopies(t, dirs)
	_ = cmd.Process.Signal(sig)
	killed := time.Now()
	var left []string
	for time.Since(killed) < 5*time.Second {
		if left = append(append(nsClientRuns(t, names[0]), nsClientRuns(t, names[1])...), existing(dirs)...); len(left) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("coordinator sent %v with %d client-run processes on the hosts (%v): %d processes and copies left after %v", sig, running, exes, len(left), time.Since(killed).Round(time.Millisecond))
	if running != 2 || len(left) > 0 {
		t.Errorf("%v: %d client-run running before it (want 2), left 5 s after it: %v", sig, running, fmt.Sprint(left))
	}
}

// lostClientResults checks the results directory (under res) of the run whose second
// client was killed: summary.json has both clients' rows, the second marked lost with its
// data until then (transactions > 0), the merged count their sum; the run's warnings name
// the lost client; intervals.csv and report.md were written, the latter with the row.
func lostClientResults(t *testing.T, res string, names []string) {
	t.Helper()
	sums, _ := filepath.Glob(filepath.Join(res, "*", "summary.json"))
	if len(sums) != 1 {
		t.Fatalf("summary.json under %s: %q", res, sums)
	}
	dir := filepath.Dir(sums[0])
	var s clientsSweepSummary
	if err := json.Unmarshal(mustReadFile(t, sums[0]), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Clients) != 2 || s.Clients[0].Lost != "" || !strings.Contains(s.Clients[1].Lost, "client "+names[1]+" lost at") ||
		s.Clients[1].Transactions == 0 || s.Clients[0].Transactions+s.Clients[1].Transactions != s.Transactions {
		t.Errorf("%s: clients %+v, merged %d transactions: want %s lost with its transactions until then, the merged count their sum", sums[0], s.Clients, s.Transactions, names[1])
	}
	man := string(mustReadFile(t, filepath.Join(dir, "manifest.json")))
	md := string(mustReadFile(t, filepath.Join(dir, "report.md")))
	if !strings.Contains(man, "client "+names[1]+" lost at") || !strings.Contains(md, "| "+names[1]+" | 1 |") {
		t.Errorf("%s: want the lost client among manifest.json's warnings and its row in report.md", dir)
	}
	if iv := string(mustReadFile(t, filepath.Join(dir, "intervals.csv"))); strings.Count(iv, "\n") < 3 {
		t.Errorf("%s: intervals.csv has %d lines, want the run's intervals", dir, strings.Count(iv, "\n"))
	}
}

// clientsSweepSummary is what clientsSweepOnCluster reads of a cell's summary.json.
type clientsSweepSummary struct {
	Transactions int64 `json:"transactions"`
	LatencyMs    struct {
		P99 float64 `json:"p99"`
		Max float64 `json:"max"`
	} `json:"latency_ms"`
	Clients []struct {
		Client       string  `json:"client"`
		Threads      int     `json:"threads"`
		Transactions int64   `json:"transactions"`
		P99          float64 `json:"latency_p99_ms"`
		Lost         string  `json:"lost"`
	} `json:"clients"`
}

// clientsSweepOnCluster (issue 34, acceptances 1 and 2 at the size of a test): habench run
// of a wsrep_slave_threads sweep [1, 4] on the Galera cluster called cluster (3 lab
// hosts), driven from two other lab hosts (--clients, --client-ssh-config): both cells
// done; each cell's merged transactions are the clients' sum, each client ran 2 of the 4
// threads, its p99 is at most the merged maximum; manifest.json names both clients
// with a clock offset; report.md (the sweep's and each cell's) has a row per client; no
// client-run process and no copy of habench is left on the client hosts. The sweep's
// tables are dropped again (the caller's test prepares its own).
func clientsSweepOnCluster(t *testing.T, state, cluster, sshConfig string, clientNames []string) {
	t.Helper()
	scen := filepath.Join(t.TempDir(), "clsweep.yaml")
	if err := os.WriteFile(scen, []byte(`name: clsweep
topologies:
  - {name: g, provider: existing, cluster: `+cluster+`}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 100, threads: 4, time: 3, rate: 40, report-interval: 1}
sweep:
  knob.wsrep_slave_threads: [1, 4]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := t.TempDir()
	r := runLong(t, 4*time.Minute, state, "--log-level", "debug", "run", scen, "--results", res, "--quiet", "--clients", strings.Join(clientNames, ","), "--client-ssh-config", sshConfig)
	removeCopies(t, copiesIn(r.stderr))
	t.Logf("habench run --clients %v: exit %d\n%s%s", clientNames, r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Errorf("run --clients: exit %d", r.code)
	}
	for _, n := range clientNames {
		if left := nsClientRuns(t, n); len(left) > 0 {
			t.Errorf("after the run, on %s: %v", n, left)
		}
	}
	if made, left := copiesIn(r.stderr), existing(copiesIn(r.stderr)); len(made) != 4 || len(left) > 0 {
		t.Errorf("the run's copies %v: want 4 (2 cells x 2 clients), none left after the run: %v", made, left)
	}
	// Every interval line is both clients' (an interval one client's run ended before is
	// not printed: it would read as a drop in throughput; one without a client is noted).
	if m := regexp.MustCompile(`(?m)^\[ \d+s \] thds: `).FindAllString(r.stdout, -1); len(m) < 4 {
		t.Errorf("%d interval lines, want 2 or 3 a cell", len(m))
	}
	if strings.Contains(r.stdout, "without client(s)") {
		t.Errorf("an interval line without a client (see the NOTE)")
	}
	sums, _ := filepath.Glob(filepath.Join(res, "*", "*", "summary.json"))
	if len(sums) != 2 {
		t.Fatalf("cells' summary.json under %s: %q, want 2", res, sums)
	}
	for _, p := range sums {
		var s clientsSweepSummary
		if err := json.Unmarshal(mustReadFile(t, p), &s); err != nil {
			t.Fatal(err)
		}
		var sum int64
		names := []string{}
		for _, c := range s.Clients {
			sum += c.Transactions
			names = append(names, c.Client)
			// A client's p99 may lie above the merged p99 (its latencies the slower
			// part of the union), never above the merged maximum.
			if c.Threads != 2 || c.Lost != "" || c.P99 > s.LatencyMs.Max {
				t.Errorf("%s: client %s: threads %d, lost %q, p99 %.2f (merged max %.2f): want 2 threads, not lost, p99 <= the merged max", p, c.Client, c.Threads, c.Lost, c.P99, s.LatencyMs.Max)
			}
		}
		if !slices.Equal(names, clientNames) || sum != s.Transactions || sum == 0 {
			t.Errorf("%s: clients %v with %d transactions, merged %d: want %v, their sum the merged count", p, names, sum, s.Transactions, clientNames)
		}
		man := string(mustReadFile(t, filepath.Join(filepath.Dir(p), "manifest.json")))
		md := string(mustReadFile(t, filepath.Join(filepath.Dir(p), "report.md")))
		for _, n := range clientNames {
			if !strings.Contains(man, `"name": "`+n+`"`) || !strings.Contains(md, "| "+n+" | 2 |") {
				t.Errorf("%s: client %s: want it in manifest.json clients and a row in report.md's Clients", filepath.Dir(p), n)
			}
		}
		if !strings.Contains(man, `"offset_ms"`) {
			t.Errorf("%s: manifest.json: no client clock offset", filepath.Dir(p))
		}
	}
	tops, _ := filepath.Glob(filepath.Join(res, "*", "report.md"))
	if len(tops) != 1 || strings.Count(string(mustReadFile(t, tops[0])), "| "+clientNames[1]+" | 2 |") != 2 {
		t.Errorf("the sweep's report.md %q: want a row for %s in each of the 2 cells", tops, clientNames[1])
	}
	if r := habench(t, state, "sysbench", "oltp_read_write", "cleanup", "--cluster", cluster, "--tables", "1"); r.code != 0 {
		t.Errorf("cleanup after the sweep: exit %d\n%s", r.code, r.stderr)
	}
}
