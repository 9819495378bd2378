//go:build bench

package experiment_test

// The userspace link (netem.NewUserspace, for kernels without sch_netem) on a real
// cluster. Run as root; each benchmark deploys its own 3-node MariaDB semi-sync sandbox,
// one network namespace per node, and destroys it afterwards:
//
//	go test -tags bench -count=1 -run '^$' -bench 'LinkZeroDelayTPS|LinkRTTUnderLoad' -benchtime 1x -v ./experiment/
//
// HABENCH_BENCH_TIME (seconds per run, default 20), HABENCH_BENCH_THREADS (default 8) and
// HABENCH_BENCH_ROUNDS (bridge/userspace pairs, default 2) tune BenchmarkLinkZeroDelayTPS;
// HABENCH_BENCH_THREADS and HABENCH_BENCH_SAMPLES (handshakes per directed link, default
// 200) tune BenchmarkLinkRTTUnderLoad. Only -benchtime 1x makes sense: one iteration is
// a whole experiment.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"golang.org/x/sys/unix"
)

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// linkBenchCluster deploys a 3-node MariaDB semi-sync sandbox in network namespaces
// (destroyed at cleanup) and prepares oltp_read_write with 4 tables of 10000 rows. It
// skips where namespaces or the userspace link cannot work.
func linkBenchCluster(ctx context.Context, b *testing.B, prefix string, threads int) (*cluster.Cluster, []netem.Endpoint, workload.Workload, workload.Target, workload.Options) {
	b.Helper()
	prereq.Need(b, cluster.NetNamespacesUsable())
	prereq.NeedErr(b, "userspace link unusable here", netem.UserspaceAvailable())
	s := testenv.Store(b)
	s.Network = cluster.NetNamespaces
	t0 := time.Now()
	// HABENCH_BENCH_KIND picks the cluster: semisync (default, MariaDB), galera (MariaDB) or
	// group (MySQL 9.7).
	kind, flavor := topology.SemiSync, topology.MariaDB
	switch k := os.Getenv("HABENCH_BENCH_KIND"); k {
	case "", "semisync":
	case "galera":
		kind = topology.Galera
	case "group":
		kind, flavor = topology.Group, topology.MySQL
	default:
		b.Fatalf("HABENCH_BENCH_KIND %q: want semisync, galera or group", k)
	}
	c, err := s.Deploy(ctx, testenv.Spec(b, testenv.Name(b, prefix), kind, 3, flavor))
	if err != nil {
		b.Fatal(err)
	}
	eps, err := links.Endpoints(c)
	if err != nil {
		b.Fatal(err)
	}
	tg, err := experiment.ClusterTarget(c, "sbtest", nil)
	if err != nil {
		b.Fatal(err)
	}
	wl, err := workload.Lookup("oltp_read_write")
	if err != nil {
		b.Fatal(err)
	}
	o := workload.DefaultOptions()
	o.Tables, o.TableSize, o.Threads = 4, 10000, threads
	if err := wl.Prepare(ctx, tg, o, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("cluster %s (%s %s, %d nodes, bridge hb-%s) deployed and prepared (%d x %d rows) in %v",
		c.Name, c.Spec.Flavor, c.Spec.Kind, len(c.Nodes), c.Name, o.Tables, o.TableSize, time.Since(t0).Round(time.Second))
	return c, eps, wl, tg, o
}

// cpuMeter reads this process's CPU time (getrusage) and the machine's busy time
// (/proc/stat), to tell how much CPU a run had and how much of it this process (workload
// client plus userspace link) used.
type cpuMeter struct {
	wall          time.Time
	self          time.Duration
	busy, total   uint64 // jiffies
	haveProcStats bool
}

func readCPU() cpuMeter {
	m := cpuMeter{wall: time.Now()}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		m.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
		if len(f) > 5 && f[0] == "cpu" {
			for i, v := range f[1:] {
				n, _ := strconv.ParseUint(v, 10, 64)
				m.total += n
				if i != 3 && i != 4 { // idle, iowait
					m.busy += n
				}
			}
			m.haveProcStats = true
		}
	}
	return m
}

// since returns the cores this process used on average and the machine's busy fraction
// (all cores) between start and m.
func (m cpuMeter) since(start cpuMeter) (selfCores, machineBusy float64) {
	if w := m.wall.Sub(start.wall).Seconds(); w > 0 {
		selfCores = (m.self - start.self).Seconds() / w
	}
	if m.haveProcStats && start.haveProcStats && m.total > start.total {
		machineBusy = float64(m.busy-start.busy) / float64(m.total-start.total)
	}
	return selfCores, machineBusy
}

// BenchmarkLinkZeroDelayTPS measures what the userspace link costs at zero delay: on one
// 3-node semi-sync cluster (HABENCH_BENCH_KIND=galera or group for those) it alternates oltp_read_write runs over the plain bridge (A)
// and through the userspace link with no impairment (B), A/B/A/B, so drift (another job
// on the machine, the buffer pool, purge) hits both alike. The client talks to the source
// over the bridge in both; what goes through the link in B is node-to-node traffic
// (binlog to the replicas, their semi-sync acknowledgements). Every run waits for the
// replicas to catch up before the next starts. Metrics: tps-bridge, tps-userspace
// (transactions over measured time, summed over the rounds), ratio (userspace/bridge),
// and the average semi-sync acknowledgement wait of each (ack-wait-us-*).
func BenchmarkLinkZeroDelayTPS(b *testing.B) {
	secs := benchEnvInt("HABENCH_BENCH_TIME", 20)
	threads := benchEnvInt("HABENCH_BENCH_THREADS", 8)
	rounds := benchEnvInt("HABENCH_BENCH_ROUNDS", 2)
	const warmup = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute+time.Duration(2*rounds)*(time.Duration(secs)*time.Second+warmup+90*time.Second))
	defer cancel()
	c, eps, wl, tg, o := linkBenchCluster(ctx, b, "bzt", threads)
	o.Time, o.Warmup = time.Duration(secs)*time.Second, warmup
	zero, err := links.Uniform(c, netem.Impairment{}) // no link impaired: every packet forwarded at once
	if err != nil {
		b.Fatal(err)
	}
	if len(zero.Links) != 0 {
		b.Fatalf("zero-delay spec has impairments: %v", zero.Links)
	}
	type total struct {
		trx            int64
		secs           float64
		ackWait, ackTx float64 // semi-sync wait weighted by acknowledged commits
	}
	var tot [2]total
	var roundTPS [2]float64 // the current round's bridge and userspace TPS
	var ratios []string
	names := [2]string{"bridge", "userspace"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 1; r <= rounds; r++ {
			for mode := range 2 {
				var u *netem.Userspace
				var linkNote string
				if mode == 1 {
					var rtts []netem.LinkRTT
					u, rtts, err = netem.ApplyUserspace(ctx, eps, zero, 10, 2*time.Second)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { u.Close() })
					var meds []string
					for _, x := range rtts {
						meds = append(meds, fmt.Sprintf("%s %v", x.Link, x.Median.Round(time.Microsecond)))
					}
					linkNote = "; link RTT medians idle " + strings.Join(meds, ", ") + realtimeNote(u)
				}
				cpu0, s0, sDB := readCPU(), readSched(os.Getpid()), readSched(serverPIDs(c)...)
				bench := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, CatchUpTimeout: time.Minute}
				out, runErr := bench.Run(ctx)
				selfCores, busy := readCPU().since(cpu0)
				sched := schedNote(c, s0, sDB)
				if u != nil {
					stats, uerr := u.Stats(), u.Err()
					cerr := u.Close()
					if err := errors.Join(uerr, cerr); err != nil {
						b.Fatalf("userspace link: %v", err)
					}
					// The link must have carried the replication: source to each replica and back.
					for _, rep := range c.Nodes[1:] {
						w := c.Writer().Name
						if stats[netem.Link{From: w, To: rep.Name}].Forwarded == 0 || stats[netem.Link{From: rep.Name, To: w}].Forwarded == 0 {
							b.Fatalf("userspace link carried no traffic between %s and %s: %v", w, rep.Name, stats)
						}
					}
					var st []string
					for _, l := range slices.SortedFunc(maps.Keys(stats), func(a, b netem.Link) int { return strings.Compare(a.String(), b.String()) }) {
						st = append(st, fmt.Sprintf("%s %d", l, stats[l].Forwarded))
					}
					linkNote += "; packets forwarded " + strings.Join(st, ", ")
				}
				if runErr != nil {
					b.Fatalf("round %d %s: %v", r, names[mode], runErr)
				}
				res, sum := out.Result, out.Summary
				tot[mode].trx += res.Transactions
				tot[mode].secs += res.TotalTime.Seconds()
				if roundTPS[mode] = res.TPS(); mode == 1 {
					ratios = append(ratios, fmt.Sprintf("%.3f", roundTPS[1]/roundTPS[0]))
				}
				ss := sum.SemiSync
				semi := "no semi-sync samples"
				if len(sum.Galera) > 0 {
					var ps []string
					for _, g := range sum.Galera {
						ps = append(ps, fmt.Sprintf("%s %.3f", g.Node, g.PausedAvg))
					}
					semi = "Galera flow-control paused fraction " + strings.Join(ps, ", ")
				}
				if ss != nil {
					tot[mode].ackWait += ss.AvgWaitUs * ss.YesTx
					tot[mode].ackTx += ss.YesTx
					semi = fmt.Sprintf("semi-sync yes %.0f no %.0f off %ds ack wait %.0f us", ss.YesTx, ss.NoTx, ss.SecondsOff, ss.AvgWaitUs)
					if ss.NoTx > 0 || ss.SecondsOff > 0 {
						b.Logf("WARNING: round %d %s: semi-sync fell back to async; this run is not comparable", r, names[mode])
					}
				}
				b.Logf("round %d %-9s: %7.1f tps, lat p50 %.2f p95 %.2f ms, %s; this process %.2f cores, machine %.0f%% busy; %s%s",
					r, names[mode], res.TPS(), res.LatencyP50, res.LatencyP95, semi, selfCores, 100*busy, sched, linkNote)
			}
		}
	}
	b.StopTimer()
	tps := func(t total) float64 { return float64(t.trx) / t.secs }
	wait := func(t total) float64 {
		if t.ackTx == 0 {
			return 0
		}
		return t.ackWait / t.ackTx
	}
	b.ReportMetric(tps(tot[0]), "tps-bridge")
	b.ReportMetric(tps(tot[1]), "tps-userspace")
	b.ReportMetric(tps(tot[1])/tps(tot[0]), "ratio")
	b.ReportMetric(wait(tot[0]), "ack-wait-us-bridge")
	b.ReportMetric(wait(tot[1]), "ack-wait-us-userspace")
	b.Logf("userspace link at zero delay: %.1f tps vs %.1f tps over the bridge, ratio %.3f (target >= 0.90); ratio per round %s",
		tps(tot[1]), tps(tot[0]), tps(tot[1])/tps(tot[0]), strings.Join(ratios, ", "))
}

// schedStat is the scheduler's account of a set of processes (/proc/PID/task/TID/schedstat,
// per thread): time on a CPU, time runnable but waiting on a run queue, and how many
// times a thread was put on a CPU.
type schedStat map[string][3]uint64 // "pid/tid" -> run ns, wait ns, slices

func readSched(pids ...int) schedStat {
	s := schedStat{}
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/task", pid)
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
			if err != nil {
				continue
			}
			var v [3]uint64
			if n, _ := fmt.Sscan(string(b), &v[0], &v[1], &v[2]); n == 3 {
				s[fmt.Sprintf("%d/%s", pid, t.Name())] = v
			}
		}
	}
	return s
}

// waitSince returns the run-queue wait per slice of the threads in s since start (threads
// that exited in between are left out, new ones count from zero), and the slices.
func (s schedStat) waitSince(start schedStat) (time.Duration, uint64) {
	var wait, slices uint64
	for k, v := range s {
		o := start[k]
		if v[2] < o[2] {
			continue
		}
		wait += v[1] - o[1]
		slices += v[2] - o[2]
	}
	if slices == 0 {
		return 0, 0
	}
	return time.Duration(wait / slices), slices
}

// schedNote renders the run-queue wait per time slice of this process and of the
// cluster's servers since start0/startDB: how long a woken thread waited for a CPU.
func schedNote(c *cluster.Cluster, start0, startDB schedStat) string {
	self, n0 := readSched(os.Getpid()).waitSince(start0)
	db, n1 := readSched(serverPIDs(c)...).waitSince(startDB)
	return fmt.Sprintf("run-queue wait per time slice: this process %v (%d slices), mariadbd %v (%d slices)",
		self.Round(time.Microsecond), n0, db.Round(time.Microsecond), n1)
}

func serverPIDs(c *cluster.Cluster) []int {
	var pids []int
	for _, n := range c.Nodes {
		if n.PID > 0 {
			pids = append(pids, n.PID)
		}
	}
	return pids
}

// deliveryThread finds the userspace link's delivery thread among this process's threads:
// by name (hbnetem: the link's one thread, which reads and delivers), else the only
// thread that sleeps in ppoll (syscall 271 on amd64; the Go runtime itself uses
// epoll_pwait, futex and nanosleep). "" when not found.
func deliveryThread() string {
	dir := fmt.Sprintf("/proc/%d/task", os.Getpid())
	tasks, _ := os.ReadDir(dir)
	for _, t := range tasks {
		if b, err := os.ReadFile(dir + "/" + t.Name() + "/comm"); err == nil && strings.TrimSpace(string(b)) == "hbnetem" {
			return t.Name()
		}
	}
	if runtime.GOARCH != "amd64" {
		return ""
	}
	for range 50 {
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			b, err := os.ReadFile(dir + "/" + t.Name() + "/syscall")
			if f := strings.Fields(string(b)); err == nil && len(f) > 0 && f[0] == "271" {
				return t.Name()
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return ""
}

// threadSched reads one thread's schedstat: run ns, run-queue wait ns, slices.
func threadSched(tid string) [3]uint64 {
	var v [3]uint64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", os.Getpid(), tid)); err == nil {
		fmt.Sscan(string(b), &v[0], &v[1], &v[2])
	}
	return v
}

// goSched reads the Go scheduler's latency histogram: how long goroutines of this
// process stayed runnable before they ran (for the link: a TUN reader after its packet
// arrived, the delivery goroutine after ppoll returned and needed a P back).
func goSched() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// goSchedNote renders the Go scheduling latencies between two goSched readings: median,
// p99 and the fraction over 100 us.
func goSchedNote(a, b *metrics.Float64Histogram) string {
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return "Go scheduling latency n/a"
	}
	var total uint64
	d := make([]uint64, len(b.Counts))
	for i := range d {
		d[i] = b.Counts[i] - a.Counts[i]
		total += d[i]
	}
	if total == 0 {
		return "Go scheduling latency: no samples"
	}
	q := func(p float64) time.Duration {
		var c uint64
		for i, n := range d {
			c += n
			if float64(c) >= p*float64(total) {
				if math.IsInf(b.Buckets[i+1], 1) {
					return time.Duration(b.Buckets[i] * 1e9)
				}
				return time.Duration(b.Buckets[i+1] * 1e9) // upper bound of the bucket
			}
		}
		return 0
	}
	var over uint64
	for i, n := range d {
		if b.Buckets[i] >= 100e-6 {
			over += n
		}
	}
	return fmt.Sprintf("Go scheduling latency p50 <= %v p99 <= %v, %.1f%% of %d over 100us",
		q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), 100*float64(over)/float64(total), total)
}

// loadTracker keeps the interval reports of a background load, to tell the TPS of a
// measurement window.
type loadTracker struct {
	mu  sync.Mutex
	ivs []timedInterval
}

type timedInterval struct {
	end time.Time
	trx float64
	len time.Duration
}

func (l *loadTracker) add(trx float64, length time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ivs = append(l.ivs, timedInterval{time.Now(), trx, length})
}

func (l *loadTracker) Interval(iv workload.Interval) { l.add(float64(iv.Transactions), iv.Length) }

// tps returns the transactions per second of the intervals that ended in (from, to].
func (l *loadTracker) tps(from, to time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var trx float64
	var d time.Duration
	for _, iv := range l.ivs {
		if iv.end.After(from) && !iv.end.After(to) {
			trx += iv.trx
			d += iv.len
		}
	}
	if d == 0 {
		return 0
	}
	return trx / d.Seconds()
}

// bgLoad is oltp_read_write running in the background until stopped.
type bgLoad struct {
	track loadTracker
	done  chan struct{}
	err   error
	stop  func() // idempotent; waits for the load to end
	note  string // set by stop
}

const loadSafetyLimit = 4 * time.Minute

// startHabenchLoad runs habench's workload engine in this process, as `habench sysbench`
// does (so the load shares this process's Go scheduler with the userspace link).
func startHabenchLoad(ctx context.Context, wl workload.Workload, tg workload.Target, o workload.Options) *bgLoad {
	l := &bgLoad{done: make(chan struct{})}
	o.Time, o.ReportInterval = loadSafetyLimit, time.Second
	lctx, cancel := context.WithCancel(ctx)
	var res *workload.Result
	go func() {
		defer close(l.done)
		res, l.err = wl.Run(lctx, tg, o, &l.track)
		if errors.Is(l.err, context.Canceled) {
			l.err = nil
		}
	}()
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			cancel()
			<-l.done
			if res != nil {
				l.note = fmt.Sprintf("%.0f tps over %v, p95 %.2f ms, %d ignored errors", res.TPS(), res.TotalTime.Round(time.Second), res.LatencyP95, res.IgnoredErrors)
			}
		})
	}
	return l
}

var sysbenchInterval = regexp.MustCompile(`^\[ *([0-9.]+)s \] thds: \d+ tps: ([0-9.]+)`)

// startSysbenchLoad runs sysbench 1.0.20 against the cluster's source, in its own process.
func startSysbenchLoad(ctx context.Context, c *cluster.Cluster, o workload.Options) (*bgLoad, error) {
	w := c.Writer()
	lctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(lctx, "sysbench", "oltp_read_write",
		"--mysql-host="+w.Host, "--mysql-port="+strconv.Itoa(w.Port), "--mysql-user="+c.User, "--mysql-password="+c.Password,
		"--mysql-db=sbtest", "--tables="+strconv.Itoa(o.Tables), "--table-size="+strconv.Itoa(o.TableSize),
		"--threads="+strconv.Itoa(o.Threads), "--time="+strconv.Itoa(int(loadSafetyLimit.Seconds())),
		"--report-interval=1", "--rand-type=uniform", "run")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	l := &bgLoad{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(out)
		var total float64
		var n int
		for sc.Scan() {
			if m := sysbenchInterval.FindStringSubmatch(sc.Text()); m != nil {
				tps, _ := strconv.ParseFloat(m[2], 64)
				l.track.add(tps, time.Second)
				total += tps
				n++
			}
		}
		err := cmd.Wait()
		if lctx.Err() == nil && err != nil {
			l.err = fmt.Errorf("sysbench: %w: %s", err, stderr.String())
		}
		if n > 0 {
			l.note = fmt.Sprintf("%.0f tps over %ds (sysbench pid %d)", total/float64(n), n, cmd.Process.Pid)
		}
	}()
	var once sync.Once
	l.stop = func() { once.Do(func() { cancel(); <-l.done }) }
	return l, nil
}

// BenchmarkLinkRTTUnderLoad measures the round trip the userspace link adds while
// oltp_read_write (8 threads) loads a 3-node semi-sync cluster: 0.6 ms and 5 ms one-way on
// every directed link (requested RTT 1.2 ms and 10 ms). Two loads, one after the other on
// the same cluster: "habench" is habench's own workload engine running in this process
// (as `habench sysbench --links` runs it: the load shares the Go scheduler with the
// link), "sysbench" is sysbench 1.0.20 in its own process (skipped when not installed).
// For each directed pair the added RTT is the TCP handshake time (netem.MeasureRTT, from
// inside the nodes' namespaces) minus the same pair's median through the link at zero
// delay, measured under the same load just before. Sub-benchmark metrics:
// requested-RTT-us, added-median-us (median over the 6 directed links of each link's
// added median), added-p99-us (worst link's p99 minus its baseline median),
// err-median-pct and err-p99-pct (relative to the request; targets |5%| and |25%|),
// worst-link-err-median-pct, late-mean-us (mean lateness of delayed packets,
// Userspace.Lateness). Logged besides: the plain bridge's RTT under the same load, a
// 1 us one-way diagnostic (the cost of the delay queue and delivery thread themselves),
// and where the time goes (run-queue waits, Go scheduling latencies, the delivery
// thread's waits and CPU).
func BenchmarkLinkRTTUnderLoad(b *testing.B) {
	threads := benchEnvInt("HABENCH_BENCH_THREADS", 8)
	samples := benchEnvInt("HABENCH_BENCH_SAMPLES", 200)
	loads := strings.Split(os.Getenv("HABENCH_BENCH_LOAD"), ",")
	if loads[0] == "" {
		loads = []string{"habench", "sysbench"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, eps, wl, tg, o := linkBenchCluster(ctx, b, "bzr", threads)
	for _, kind := range loads {
		b.Run(kind, func(b *testing.B) {
			var l *bgLoad
			switch kind {
			case "habench":
				l = startHabenchLoad(ctx, wl, tg, o)
			case "sysbench":
				if _, err := exec.LookPath("sysbench"); err != nil {
					prereq.Missing(b, "sysbench not installed (apt-get install sysbench, or `make deps`)")
				}
				var err error
				if l, err = startSysbenchLoad(ctx, c, o); err != nil {
					b.Fatal(err)
				}
			default:
				b.Fatalf("HABENCH_BENCH_LOAD %q: want habench and/or sysbench", kind)
			}
			b.Cleanup(l.stop) // also when a Fatal ends the benchmark early
			rttUnderLoad(ctx, b, c, eps, l, samples)
			l.stop()
			if l.err != nil {
				b.Errorf("%s load: %v", kind, l.err)
			}
			b.Logf("%s load over the whole phase: %s", kind, l.note)
		})
	}
}

func rttUnderLoad(ctx context.Context, b *testing.B, c *cluster.Cluster, eps []netem.Endpoint, l *bgLoad, samples int) {
	zero, err := links.Uniform(c, netem.Impairment{})
	if err != nil {
		b.Fatal(err)
	}
	// sleep and measure take the running (sub-)benchmark: only its own goroutine may end it.
	sleep := func(b *testing.B, d time.Duration) {
		select {
		case <-time.After(d):
		case <-l.done:
			b.Fatalf("load ended early: %v", l.err)
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
	}
	// measure runs MeasureRTT and logs it with the load's TPS since `since` (when the
	// current link was applied), the run-queue waits of this process and the servers, and
	// during the measurement the Go scheduler's latencies and (delayed links) the delivery
	// thread's run-queue wait per wake-up.
	measure := func(b *testing.B, name string, spec *netem.Spec, since time.Time, s0, sDB schedStat) []netem.LinkRTT {
		var tid string
		var d0 [3]uint64
		if spec != nil && len(spec.Links) > 0 {
			if tid = deliveryThread(); tid != "" {
				d0 = threadSched(tid)
			}
		}
		g0, m0 := goSched(), time.Now()
		rtts, err := netem.MeasureRTT(ctx, eps, spec, samples, 2*time.Second)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		diag := goSchedNote(g0, goSched())
		if tid != "" {
			d1 := threadSched(tid)
			if n := d1[2] - d0[2]; n > 0 {
				diag += fmt.Sprintf("; delivery thread %s: run-queue wait %v per wake-up over %d wake-ups, on CPU %.0f%% of the time",
					tid, (time.Duration((d1[1]-d0[1])/n) * time.Nanosecond).Round(time.Microsecond), n,
					100*float64(d1[0]-d0[0])/float64(time.Since(m0)))
			}
		}
		var parts []string
		for _, r := range rtts {
			parts = append(parts, fmt.Sprintf("%s %v/%v", r.Link, r.Median.Round(time.Microsecond), r.P99.Round(time.Microsecond)))
			if r.Failed > 0 {
				parts[len(parts)-1] += fmt.Sprintf(" (%d failed)", r.Failed)
			}
		}
		b.Logf("%s: load %.0f tps; %s; %s; RTT median/p99 %s", name, l.track.tps(since, time.Now()),
			schedNote(c, s0, sDB), diag, strings.Join(parts, ", "))
		return rtts
	}
	phase := func() (time.Time, schedStat, schedStat) {
		return time.Now(), readSched(os.Getpid()), readSched(serverPIDs(c)...)
	}

	t0, s0, sDB := phase()
	sleep(b, 5*time.Second) // warm up
	measure(b, "plain bridge", nil, t0, s0, sDB)

	u0, err := netem.NewUserspace(eps, zero)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { u0.Close() })
	t0, s0, sDB = phase()
	sleep(b, 2*time.Second)
	base := map[netem.Link]time.Duration{}
	for _, r := range measure(b, "userspace link, zero delay (baseline)", zero, t0, s0, sDB) {
		base[r.Link] = r.Median
	}
	if err := errors.Join(u0.Err(), u0.Close()); err != nil {
		b.Fatal(err)
	}

	// Diagnostic: 1 us one-way sends every packet through the delay queue and the delivery
	// thread with next to no delay. What it adds over the baseline is the cost of that path
	// (delivery lateness, and the reader and the probe waking up colder than in the
	// back-to-back zero-delay path), not of the requested delay.
	if tiny, err := links.Uniform(c, netem.Impairment{Delay: time.Microsecond}); err == nil {
		u1, err := netem.NewUserspace(eps, tiny)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { u1.Close() })
		t0, s0, sDB = phase()
		sleep(b, 2*time.Second)
		var added []time.Duration
		for _, r := range measure(b, "one-way 1µs (delivery path, no real delay)", tiny, t0, s0, sDB) {
			added = append(added, r.Median-base[r.Link])
		}
		mean, maxLate, pk := u1.Lateness()
		if err := errors.Join(u1.Err(), u1.Close()); err != nil {
			b.Fatal(err)
		}
		slices.Sort(added)
		b.Logf("one-way 1µs: added median %v (links %v): the delivery path's own cost per round trip; delivery lateness mean %v max %v over %d packets",
			((added[len(added)/2] + added[(len(added)-1)/2]) / 2).Round(time.Microsecond), roundAll(added), mean.Round(time.Microsecond), maxLate.Round(time.Microsecond), pk)
	}

	for _, oneWay := range []time.Duration{600 * time.Microsecond, 5 * time.Millisecond} {
		b.Run(oneWay.String(), func(b *testing.B) {
			spec, err := links.Uniform(c, netem.Impairment{Delay: oneWay})
			if err != nil {
				b.Fatal(err)
			}
			var rtts []netem.LinkRTT
			var u *netem.Userspace
			for i := 0; i < b.N; i++ {
				if u != nil {
					u.Close()
				}
				u, err = netem.NewUserspace(eps, spec)
				if err != nil {
					b.Fatal(err)
				}
				uu := u
				b.Cleanup(func() { uu.Close() })
				t0, s0, sDB := phase()
				sleep(b, 3*time.Second) // the load settles to the slower commits
				rtts = measure(b, fmt.Sprintf("one-way %v", oneWay), spec, t0, s0, sDB)
			}
			mean, maxLate, pk := u.Lateness()
			if err := errors.Join(u.Err(), u.Close()); err != nil {
				b.Fatal(err)
			}
			var added []time.Duration
			var worstP99, worstErr time.Duration
			req := rtts[0].Requested
			for _, r := range rtts {
				if r.Samples == 0 {
					b.Fatalf("%s: no handshake completed", r.Link)
				}
				a := r.Median - base[r.Link]
				added = append(added, a)
				if e := a - r.Requested; e.Abs() > worstErr.Abs() {
					worstErr = e
				}
				worstP99 = max(worstP99, r.P99-base[r.Link])
			}
			slices.Sort(added)
			med := (added[len(added)/2] + added[(len(added)-1)/2]) / 2
			pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(req) }
			b.ReportMetric(us(req), "requested-RTT-us")
			b.ReportMetric(us(med), "added-median-us")
			b.ReportMetric(us(worstP99), "added-p99-us")
			b.ReportMetric(pct(med-req), "err-median-pct")
			b.ReportMetric(pct(worstP99-req), "err-p99-pct")
			b.ReportMetric(pct(worstErr), "worst-link-err-median-pct")
			b.ReportMetric(us(mean), "late-mean-us")
			b.Logf("one-way %v: requested RTT %v, added median %v (links %v), worst p99 +%v; delivery lateness mean %v max %v over %d packets%s",
				oneWay, req, med.Round(time.Microsecond), roundAll(added), worstP99.Round(time.Microsecond), mean.Round(time.Microsecond), maxLate.Round(time.Microsecond), pk, realtimeNote(u))
			if e := math.Abs(pct(med - req)); e > 5 {
				b.Logf("MISSED: median error %.1f%% > 5%%", e)
			}
			if e := math.Abs(pct(worstP99 - req)); e > 25 {
				b.Logf("MISSED: p99 error %.1f%% > 25%%", e)
			}
		})
	}
}

// realtimeNote tells whether the link's thread runs SCHED_FIFO (links that say).
func realtimeNote(u any) string {
	if rt, ok := u.(interface{ Realtime() bool }); ok {
		return fmt.Sprintf("; link thread SCHED_FIFO %v", rt.Realtime())
	}
	return ""
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Microsecond)
	}
	return out
}
