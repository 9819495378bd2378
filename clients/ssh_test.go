package clients

import (
	"context"
	"database/sql"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/workload"
)

// clientRuns returns the `habench client-run` processes in network namespace ns (pids
// and command lines).
func clientRuns(t *testing.T, ns string) []string {
	return testhost.ProcessesIn(t, ns, "client-run")
}

// TestSSHClients: two clients on two hosts of a lab (network namespaces running sshd),
// reached over SSH (SSHRunner, the habench under test as Bin: the namespaces share the
// file system), against a MariaDB in the first host's namespace. Check refuses a habench that is not
// on a host in one line naming the client. A 3 s run: the merged transactions are the
// server's Com_commit delta. A 30 s run: c2's SSH session killed after the second
// interval: c2 is lost (named), and its habench on its host ends by itself within 3 s; the
// run stopped (its context ended) after the fourth: c1 sends its partial result; after
// Run, no client-run process is left on either host.
func TestSSHClients(t *testing.T) {
	t.Parallel()
	testhost.Require(t, testhost.Options{SSH: true})
	lab := testhost.New(t, 2, testhost.Options{SSH: true})
	names := []string{lab.Hosts[0].Name, lab.Hosts[1].Name}
	t.Cleanup(func() { host.CloseMatching(func(d string) bool { return d == names[0] || d == names[1] }) })
	s := testserver.StartMariaDBAt(t, testserver.Listen{Netns: names[0], Host: lab.Hosts[0].Addr})
	admin := s.Open(t, "")
	testserver.Exec(t, admin, "CREATE DATABASE sbtest")
	tg := workload.Target{Endpoints: []workload.Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}}, User: "root", DB: "sbtest"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, _ := workload.Lookup("oltp_read_write")
	if err := w.Prepare(ctx, tg, procOptions(), nil); err != nil {
		t.Fatal(err)
	}
	bin := testenv.Habench(t)
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(string(out)), "habench ")
	var mu sync.Mutex
	hosts := map[string]*host.SSH{}
	r := SSHRunner{Bin: bin, Host: func(c string) *host.SSH {
		mu.Lock()
		defer mu.Unlock()
		if hosts[c] == nil {
			hosts[c] = &host.SSH{Dest: c, Config: lab.SSHConfig}
		}
		return hosts[c]
	}}
	for _, c := range names {
		if err := r.Check(ctx, c, version); err != nil {
			t.Fatal(err)
		}
	}
	bad := r
	bad.Bin = "/nonexistent/habench"
	if err := bad.Check(ctx, names[1], version); err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "client "+names[1]) {
		t.Errorf("Check of a host without Bin: %v, want one line naming the client", err)
	}
	sshRun(t, ctx, r, names, version, tg, admin)
	sshKilled(t, ctx, r, names, version, tg)
	sshFrozen(t, ctx, r, names, version, tg)
}

// sshFrozen: a 6 s run; c2's habench stopped (SIGSTOP) on its host after the second
// interval, its session alive: c2 is declared lost when silent for 2 report intervals and
// 3 s, named at its last report, its session ended; once continued (SIGCONT) its habench
// ends by itself within 3 s.
func sshFrozen(t *testing.T, ctx context.Context, r SSHRunner, names []string, version string, tg workload.Target) {
	cfg := sshConfig(t, r, names, version, tg, 6*time.Second)
	ivs := 0
	var stopped time.Time
	var pids []int
	cfg.Reporter = workload.ReporterFunc(func(workload.Interval) {
		if ivs++; ivs == 2 {
			for _, p := range clientRuns(t, names[1]) {
				pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
				pids = append(pids, pid)
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
			stopped = time.Now()
		}
	})
	defer func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	_, err := Run(ctx, cfg)
	var lost LostClient
	t.Logf("c2 stopped at %s: %v", stopped.UTC().Format("15:04:05.000"), err)
	if len(pids) != 1 || !errors.As(err, &lost) || lost.Client != names[1] || !strings.Contains(err.Error(), "nothing from it") ||
		lost.At.Sub(stopped).Abs() > 1500*time.Millisecond {
		t.Fatalf("stopped %v, Run's error %v: want %s lost at about its stop", pids, err, names[1])
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	cont := time.Now()
	for time.Since(cont) < 3*time.Second && len(clientRuns(t, names[1])) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if left := clientRuns(t, names[1]); len(left) > 0 {
		t.Errorf("3 s after SIGCONT, on %s: %v", names[1], left)
	}
	t.Logf("continued: its habench gone from its host after %v", time.Since(cont).Round(time.Millisecond))
}

// sshConfig is a Run from names over r: 3 threads at --rate 30 for d.
func sshConfig(t *testing.T, r Runner, names []string, version string, tg workload.Target, d time.Duration) Config {
	o := procOptions()
	o.Threads, o.Rate, o.Time = 3, 30, d
	return Config{Clients: names, Runner: r, Version: version, Workload: "oltp_read_write", Options: o, Target: tg,
		StartIn: time.Second, Note: func(l string) { t.Log(l) }}
}

// sshRun: a 3 s run from both hosts; the merged transactions are the server's Com_commit delta.
func sshRun(t *testing.T, ctx context.Context, r SSHRunner, names []string, version string, tg workload.Target, admin *sql.DB) {
	before := testserver.ComCounters(t, admin)
	began := time.Now()
	out, err := Run(ctx, sshConfig(t, r, names, version, tg, 3*time.Second))
	took := time.Since(began)
	after := testserver.ComCounters(t, admin)
	if err != nil {
		t.Fatal(err)
	}
	res, commits := out.Result, after["Com_commit"]-before["Com_commit"]
	t.Logf("over SSH, %v: %d transactions, %.1f TPS, p95 %.2f ms; server Com_commit delta %d; %d intervals", took.Round(time.Millisecond),
		res.Transactions, res.TPS(), res.LatencyP95, commits, len(out.Intervals))
	for _, c := range out.Clients {
		t.Logf("client %s: %d threads, %d transactions, %.1f TPS, p95 %.2f ms, CPU %.3f of %d", c.Client, c.Threads, c.Transactions, c.TPS, c.LatencyP95, c.CPUCores, c.CPUs)
	}
	if res.Transactions == 0 || res.Transactions != commits || len(out.Clients) != 2 || out.Clients[0].Partial || out.Clients[1].Partial {
		t.Errorf("merged %d transactions, server's Com_commit delta %d, rows %+v", res.Transactions, commits, out.Clients)
	}
}

// sshKilled: a 30 s run; c2's SSH session killed after the second interval, the run
// stopped after the fourth.
func sshKilled(t *testing.T, ctx context.Context, r SSHRunner, names []string, version string, tg workload.Target) {
	kr := &keepRunner{Runner: r, procs: map[string]*Proc{}}
	cfg := sshConfig(t, kr, names, version, tg, 30*time.Second)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ivs := 0
	var killed time.Time
	gone := make(chan time.Duration, 1) // how long c2's habench took to end on its host (-1: not in 3 s)
	cfg.Reporter = workload.ReporterFunc(func(workload.Interval) {
		switch ivs++; ivs {
		case 2:
			killed = time.Now()
			kr.get(names[1]).Kill()
			go func() {
				for time.Since(killed) < 3*time.Second {
					if len(clientRuns(t, names[1])) == 0 {
						gone <- time.Since(killed)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				gone <- -1
			}()
		case 4:
			stop()
		}
	})
	out, err := Run(ctx, cfg)
	var g time.Duration
	select {
	case g = <-gone:
	case <-time.After(5 * time.Second):
	}
	t.Logf("c2's session killed: its habench gone from its host after %v; Run: %v", g, err)
	var lost LostClient
	if !errors.As(err, &lost) || lost.Client != names[1] || len(out.Clients) != 2 || !out.Clients[1].Partial || out.Clients[0].Partial {
		t.Errorf("Run's error %v, outcome %+v: want %s lost, its row partial, %s's own", err, out, names[1], names[0])
	}
	if g <= 0 {
		t.Errorf("c2's habench still on its host 3 s after its session was killed: %v", clientRuns(t, names[1]))
	}
	for _, c := range names {
		if left := clientRuns(t, c); len(left) > 0 {
			t.Errorf("after Run, on %s: %v", c, left)
		}
	}
}

// keepRunner keeps the processes its Runner started, by client.
type keepRunner struct {
	Runner
	mu    sync.Mutex
	procs map[string]*Proc
}

func (k *keepRunner) Start(ctx context.Context, client string) (*Proc, error) {
	p, err := k.Runner.Start(ctx, client)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.procs[client] = p
	return p, err
}

func (k *keepRunner) get(client string) *Proc {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.procs[client]
}
