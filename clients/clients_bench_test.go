//go:build bench && unix

package clients

// Run with `make bench`, or:
//
//	HABENCH_TEST_BIN=$PWD/bin/habench go test -tags bench -run '^$' -bench ClientsSplit -benchtime=1x ./clients/
//
// Env knobs: HABENCH_BENCH_TIME (seconds per run, 10), HABENCH_BENCH_THREADS (8),
// HABENCH_BENCH_CLIENTS (the split arm's clients, 2), HABENCH_BENCH_ROUNDS (3),
// HABENCH_BENCH_TABLES (8), HABENCH_BENCH_SIZE (rows per table, 100000),
// HABENCH_BENCH_TEST (oltp_read_write), HABENCH_BENCH_RATE (--rate, transactions/s of
// the whole run, split among the clients; 0: unlimited, the default), HABENCH_BENCH_PIN=1
// (the server's threads on the last CPU, this process and the clients on the others:
// taskset), HABENCH_BENCH_PLAIN=1 (a third arm: the split's
// processes as plain `habench sysbench run`s, no coordinator). It prints ratios only;
// nothing in it passes or fails on a number.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/workload"
)

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchCPU is the user+system CPU of this process (syscall.RUSAGE_SELF) or of its
// waited-for children (syscall.RUSAGE_CHILDREN).
func benchCPU(b *testing.B, who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the user+system CPU of process pid from /proc/PID/stat (Linux), or -1 when
// it cannot be read (pid 0, another system).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // after the command's name
	if len(fields) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(fields[11], 10, 64) // utime, field 14 of stat(5)
	st, err2 := strconv.ParseInt(fields[12], 10, 64) // stime, field 15
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ: 100 on Linux
}

// loadavg is /proc/loadavg's first three fields ("n/a" without it).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "n/a"
}

// splitArm is one side of BenchmarkClientsSplit: its clients (names), and what its runs
// measured, summed over the rounds.
type splitArm struct {
	name    string
	clients []string
	// plain: its clients are `habench sysbench TEST run` processes started together,
	// no coordinator (runPlain).
	plain  bool
	events float64 // the merged Results' transactions
	secs   float64 // their TotalTime (s)
	tps    []float64
	// child: the client-run processes' rusage (from their start to their exit: setup and
	// stream included); engine: the CPU their engines measured during their runs
	// (ClientRow.CPUCores x its wall time, core-seconds); self: this process's (the
	// coordinator: starting them, decoding their streams, merging); server: mariadbd's
	// (-1: unknown).
	child, self, server time.Duration
	engine              float64
}

// run runs one round of a, measured: Run with cfg's options from a's clients, or for a
// plain arm its plain processes.
func (a *splitArm) run(b *testing.B, ctx context.Context, cfg Config, serverPID int) {
	b.Helper()
	c0, s0, m0 := benchCPU(b, syscall.RUSAGE_CHILDREN), benchCPU(b, syscall.RUSAGE_SELF), procCPU(serverPID)
	var out *Outcome
	var err error
	if a.plain {
		out, err = runPlain(ctx, cfg, len(a.clients))
	} else {
		cfg.Clients = a.clients
		out, err = Run(ctx, cfg)
	}
	c1, s1, m1 := benchCPU(b, syscall.RUSAGE_CHILDREN), benchCPU(b, syscall.RUSAGE_SELF), procCPU(serverPID)
	if err != nil {
		b.Fatalf("%s: %v", a.name, err)
	}
	r := out.Result
	a.events += float64(r.Transactions)
	a.secs += r.TotalTime.Seconds()
	a.tps = append(a.tps, r.TPS())
	a.child += c1 - c0
	a.self += s1 - s0
	if m0 < 0 || m1 < 0 || a.server < 0 {
		a.server = -1
	} else {
		a.server += m1 - m0
	}
	var rows []string
	for _, c := range out.Clients {
		if c.TPS > 0 {
			a.engine += c.CPUCores * float64(c.Transactions) / c.TPS
		}
		row := fmt.Sprintf("%s %d threads %.1f TPS", c.Client, c.Threads, c.TPS)
		if c.CPUs > 0 {
			row += fmt.Sprintf(" CPU %.2f of %d", c.CPUCores, c.CPUs)
		}
		rows = append(rows, row)
	}
	b.Logf("%s: %.1f TPS over %.2f s, %d ignored errors %v, client processes %v CPU, this process %v; %s", a.name, r.TPS(),
		r.TotalTime.Seconds(), r.IgnoredErrors, r.ErrorsByCode, (c1 - c0).Round(time.Millisecond), (s1 - s0).Round(time.Millisecond), strings.Join(rows, "; "))
}

var (
	plainTransactions = regexp.MustCompile(`transactions:\s+(\d+)`)
	plainTotalTime    = regexp.MustCompile(`total time:\s+([0-9.]+)s`)
	plainIgnored      = regexp.MustCompile(`ignored errors:\s+(\d+)`)
)

// runPlain runs cfg's workload as n `habench sysbench TEST run` processes of cfg's
// LocalRunner's binary started together, each with its share of the threads and rate
// (Split) and 1 s interval reports (as the clients report to the coordinator), and
// returns their transactions summed over the longest one's total time, with a row per
// process (no CPU: a plain run does not print it).
func runPlain(ctx context.Context, cfg Config, n int) (*Outcome, error) {
	shares, err := Split(cfg.Options, n)
	if err != nil {
		return nil, err
	}
	ep, o := cfg.Target.Endpoints[0], cfg.Options
	outs, errs := make([][]byte, n), make([]error, n)
	var wg sync.WaitGroup
	for k := range shares {
		args := []string{"sysbench", cfg.Workload, "--mysql-host=" + ep.Host, "--mysql-port=" + strconv.Itoa(ep.Port),
			"--mysql-user=" + cfg.Target.User, "--mysql-db=" + cfg.Target.DB, "--tables=" + strconv.Itoa(o.Tables),
			"--table-size=" + strconv.Itoa(o.TableSize), "--threads=" + strconv.Itoa(shares[k].Threads),
			"--time=" + strconv.Itoa(int(o.Time.Seconds())), "--rand-type=" + o.RandType, "--rate=" + strconv.Itoa(shares[k].Rate), "--report-interval=1", "run"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[k], errs[k] = exec.CommandContext(ctx, cfg.Runner.(LocalRunner).Bin, args...).CombinedOutput()
		}()
	}
	wg.Wait()
	m := &Merged{Result: &workload.Result{}}
	for k, out := range outs {
		name := "p" + strconv.Itoa(k+1)
		tm, tt := plainTransactions.FindSubmatch(out), plainTotalTime.FindSubmatch(out)
		if errs[k] != nil || tm == nil || tt == nil {
			return nil, fmt.Errorf("plain process %s: %v\n%s", name, errs[k], out)
		}
		tx, _ := strconv.ParseInt(string(tm[1]), 10, 64)
		secs, _ := strconv.ParseFloat(string(tt[1]), 64)
		m.Result.Transactions += tx
		if ig := plainIgnored.FindSubmatch(out); ig != nil {
			n, _ := strconv.ParseInt(string(ig[1]), 10, 64)
			m.Result.IgnoredErrors += n
		}
		m.Result.TotalTime = max(m.Result.TotalTime, time.Duration(secs*float64(time.Second)))
		m.Clients = append(m.Clients, ClientRow{Client: name, Threads: shares[k].Threads, Transactions: tx, TPS: float64(tx) / secs})
	}
	return &Outcome{Merged: m}, nil
}

// perEvent is d per event in microseconds (-1 for an unknown d).
func (a *splitArm) perEvent(d time.Duration) float64 {
	if d < 0 || a.events == 0 {
		return -1
	}
	return float64(d.Nanoseconds()) / 1e3 / a.events
}

// BenchmarkClientsSplit runs the same workload against one MariaDB from one client process
// of THREADS threads and from CLIENTS client processes sharing them (2 x 4 by default),
// both through Run and LocalRunner with the habench binary (HABENCH_TEST_BIN, or built
// here): what splitting a run among clients and merging their streams costs, the
// clients' engines otherwise the same. Rounds alternate the arms (1 then 2, then 2 then
// 1, ...). It reports the split arm's TPS over the single one's (the merged Results'
// transactions over their TotalTime, summed over the rounds), and per event (transaction)
// of each arm: the client-run processes' CPU (their rusage as waited-for children, start
// to exit), their engines' own CPU during the runs (ClientCPUCores), the coordinator's
// (this process's rusage during Run: starting the clients, decoding, merging) and the
// server's (mariadbd's from /proc), each also as split/single. With HABENCH_BENCH_PLAIN=1
// a third arm runs the split's shares as CLIENTS `habench sysbench TEST run` processes
// started together (no coordinator, no stream; transactions summed over the longest
// one's total time): what two processes cost without the clients' machinery.
func BenchmarkClientsSplit(b *testing.B) {
	secs := benchEnvInt("HABENCH_BENCH_TIME", 10)
	threads := benchEnvInt("HABENCH_BENCH_THREADS", 8)
	n := benchEnvInt("HABENCH_BENCH_CLIENTS", 2)
	rounds := benchEnvInt("HABENCH_BENCH_ROUNDS", 3)
	tables := benchEnvInt("HABENCH_BENCH_TABLES", 8)
	size := benchEnvInt("HABENCH_BENCH_SIZE", 100000)
	rate := 0
	if r, err := strconv.Atoi(os.Getenv("HABENCH_BENCH_RATE")); err == nil && r > 0 {
		rate = r
	}
	test := os.Getenv("HABENCH_BENCH_TEST")
	if test == "" {
		test = "oltp_read_write"
	}
	load0 := loadavg()
	// The server as BenchmarkOltpVsSysbench (workload) has it: a 512 MB buffer pool and
	// MariaDB's default redo log.
	s := testserver.StartMariaDB(b, "--innodb-buffer-pool-size=512M", "--innodb-log-file-size=96M",
		"--max-prepared-stmt-count=100000")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds*2*(secs+30)+600)*time.Second)
	defer cancel()
	bin := testenv.Habench(b)
	ver, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		b.Fatalf("%s version: %v", bin, err)
	}
	admin := s.Open(b, "")
	testserver.Exec(b, admin, "CREATE DATABASE IF NOT EXISTS sbtest")
	var pidFile string
	serverPID := 0
	if err := admin.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&pidFile); err == nil {
		if p, err := os.ReadFile(pidFile); err == nil {
			serverPID, _ = strconv.Atoi(strings.TrimSpace(string(p)))
		}
	}
	tg := workload.Target{Endpoints: []workload.Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}}, User: "root", DB: "sbtest"}
	w, err := workload.Lookup(test)
	if err != nil {
		b.Fatal(err)
	}
	o := workload.DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time = tables, size, threads, time.Duration(secs)*time.Second
	o.Rate = rate
	start := time.Now()
	if err := w.Prepare(ctx, tg, o, nil); err != nil {
		b.Fatal(err)
	}
	prep := time.Since(start)

	pinned := "" // after the prepare, which uses both CPUs
	if os.Getenv("HABENCH_BENCH_PIN") == "1" {
		pinned = pin(b, serverPID)
	}
	cfg := Config{Runner: LocalRunner{Bin: bin}, Version: strings.TrimPrefix(strings.TrimSpace(string(ver)), "habench "),
		Workload: test, Options: o, Target: tg, StartIn: time.Second, Note: func(l string) { b.Log(l) }}
	split := fmt.Sprintf("%dx%d", n, threads/n)
	if threads%n != 0 {
		split = fmt.Sprintf("%d clients, %d threads", n, threads)
	}
	arms := []*splitArm{{name: fmt.Sprintf("1x%d", threads), clients: []string{"c1"}}, {name: split}}
	if os.Getenv("HABENCH_BENCH_PLAIN") == "1" {
		arms = append(arms, &splitArm{name: "plain " + split, plain: true})
	}
	for _, a := range arms[1:] {
		for k := 1; k <= n; k++ {
			a.clients = append(a.clients, "c"+strconv.Itoa(k))
		}
	}
	for round := 0; round < rounds; round++ {
		order := slices.Clone(arms)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, a := range order {
			a.run(b, ctx, cfg, serverPID)
		}
	}
	what := test + pinned
	if rate > 0 {
		what += fmt.Sprintf(" at --rate %d", rate)
	}
	reportSplit(b, arms, fmt.Sprintf("%s, %d threads, %d tables x %d rows (prepare %.1f s), %d s x %d rounds, alternating; load average before %s, after %s",
		what, threads, tables, size, prep.Seconds(), secs, rounds, load0, loadavg()))
}

// pin puts the server's threads (pid) on the last CPU and this process's on the others
// (taskset -a: the clients it starts inherit them), undone at cleanup, and returns how
// (", server on CPU 1, clients on 0"). With fewer than 2 CPUs or without the server's pid
// it fails.
func pin(b *testing.B, pid int) string {
	b.Helper()
	n := runtime.NumCPU()
	if n < 2 || pid <= 0 {
		b.Fatalf("HABENCH_BENCH_PIN: %d CPUs, server pid %d: want 2 CPUs or more and the pid", n, pid)
	}
	clients := "0"
	if n > 2 {
		clients = fmt.Sprintf("0-%d", n-2)
	}
	all := fmt.Sprintf("0-%d", n-1)
	set := func(cpus string, pid int) {
		if out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
			b.Fatalf("taskset -a -p -c %s %d: %v\n%s", cpus, pid, err, out)
		}
	}
	set(strconv.Itoa(n-1), pid)
	set(clients, os.Getpid())
	b.Cleanup(func() { set(all, os.Getpid()) })
	return fmt.Sprintf(", server on CPU %d, clients on %s", n-1, clients)
}

// reportSplit reports and prints the arms' figures (each against the first's) under the
// heading head; the metrics are the second arm's against the first's.
func reportSplit(b *testing.B, arms []*splitArm, head string) {
	var tb strings.Builder
	fmt.Fprintf(&tb, "%s:\n%-26s", head, "")
	for k, a := range arms {
		if fmt.Fprintf(&tb, " %12s", a.name); k > 0 {
			fmt.Fprintf(&tb, " %6s", "ratio")
		}
	}
	tb.WriteString("\n")
	row := func(label, metric string, f func(a *splitArm) float64) {
		fmt.Fprintf(&tb, "%-26s", label)
		u0 := f(arms[0])
		for k, a := range arms {
			u := f(a)
			switch {
			case u < 0:
				fmt.Fprintf(&tb, " %12s", "n/a")
			case k == 0:
				fmt.Fprintf(&tb, " %12.1f", u)
			default:
				fmt.Fprintf(&tb, " %12.1f %6.3f", u, u/u0)
			}
			if k == 1 && metric != "" && u >= 0 && u0 > 0 {
				b.ReportMetric(u/u0, metric)
			}
		}
		tb.WriteString("\n")
	}
	row("TPS", "tps-ratio", func(a *splitArm) float64 { return a.events / a.secs })
	fmt.Fprintf(&tb, "%-26s", "  per round")
	for k, a := range arms {
		if fmt.Fprintf(&tb, " %12s", fmtList(a.tps)); k > 0 {
			fmt.Fprintf(&tb, " %6s", "")
		}
	}
	tb.WriteString("\n")
	row("client CPU us/event", "client-cpu-ratio", func(a *splitArm) float64 { return a.perEvent(a.child) })
	row("  engines' own us/event", "engine-cpu-ratio", func(a *splitArm) float64 {
		if a.plain {
			return -1
		}
		return a.engine * 1e6 / a.events
	})
	row("coordinator CPU us/event", "coordinator-cpu-ratio", func(a *splitArm) float64 { return a.perEvent(a.self) })
	row("server CPU us/event", "", func(a *splitArm) float64 { return a.perEvent(a.server) })
	tb.WriteString("coordinator CPU per event against the clients':")
	for _, a := range arms[:2] {
		fmt.Fprintf(&tb, " %.1f%% (%s)", 100*a.perEvent(a.self)/a.perEvent(a.child), a.name)
	}
	// On stdout, so that `make bench` shows it without -v.
	fmt.Print(tb.String() + "\n")
}

// fmtList is vs as "v1/v2/..." with no decimals.
func fmtList(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strings.Join(s, "/")
}
