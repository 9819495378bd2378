package sampler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/habench/habench/host"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/proc/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The testdata files are /proc as read on the 2-core development VM (Debian 12), plus a
// diskstats of a machine with partitions, device mapper and md devices.
func TestParseProcStat(t *testing.T) {
	st, err := ParseProcStat(readTestdata(t, "stat"))
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{User: 27775, Nice: 0, System: 11714, Idle: 43525, IOWait: 718, IRQ: 0, SoftIRQ: 4795, Steal: 30}
	if st.CPU != want || st.CPUs != 2 || st.ProcsRunning != 22 {
		t.Errorf("ParseProcStat = %+v, want cpu %+v, 2 cpus, 22 running", st, want)
	}
	if b := st.CPU.Busy(); b != 27775+11714+4795+30 {
		t.Errorf("Busy = %d", b)
	}
	for _, bad := range []string{"", "cpu 1 2 3\nprocs_running 1\n", "cpu 1 2 3 4 5 6 7 x\nprocs_running 1\n", "cpu 1 2 3 4 5 6 7 8\n", "cpu 1 2 3 4 5 6 7 8\nprocs_running many\n"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q): no error", bad)
		}
	}
}

func TestParseDiskstats(t *testing.T) {
	// This VM: vda counts, loop* and zram0 do not.
	r, w, err := ParseDiskstats(readTestdata(t, "diskstats"))
	if err != nil {
		t.Fatal(err)
	}
	if r != 2049706*512 || w != 14731768*512 {
		t.Errorf("vda: read %d written %d bytes, want %d, %d", r, w, 2049706*512, 14731768*512)
	}
	// Whole disks nvme0n1, sda, mmcblk0; not their partitions, dm-0 (on nvme0n1p2), md0, zram0, loop0.
	r, w, err = ParseDiskstats(readTestdata(t, "diskstats_partitions"))
	if err != nil {
		t.Fatal(err)
	}
	if wr, ww := uint64(23466706+40000+800)*512, uint64(61260624+8000)*512; r != wr || w != ww {
		t.Errorf("partitions: read %d written %d, want %d, %d", r, w, wr, ww)
	}
	for _, bad := range []string{"   8 0 sda 1 2 3\n", "   8 0 sda 1 2 x 4 5 6 7 8 9 10 11\n"} {
		if _, _, err := ParseDiskstats([]byte(bad)); err == nil {
			t.Errorf("ParseDiskstats(%q): no error", bad)
		}
	}
}

func TestParseNetDev(t *testing.T) {
	rx, tx, err := ParseNetDev(readTestdata(t, "net_dev"))
	if err != nil {
		t.Fatal(err)
	}
	if rx != 349689163 || tx != 642648 { // eth0 (+ two idle ifb); lo left out
		t.Errorf("rx %d tx %d, want eth0's 349689163, 642648", rx, tx)
	}
	if _, _, err := ParseNetDev([]byte("  eth0: 1 2 3\n")); err == nil {
		t.Error("short line: no error")
	}
}

func TestParsePIDStat(t *testing.T) {
	b := readTestdata(t, "pid_stat_mariadbd")
	ps, err := ParsePIDStat(b)
	if err != nil {
		t.Fatal(err)
	}
	if ps != (PIDStat{UTime: 5903, STime: 2625, StartTicks: 37576}) {
		t.Errorf("ParsePIDStat = %+v", ps)
	}
	// A command name with a space and a ')' in it.
	odd := strings.Replace(string(b), "(mariadbd)", "(my sql) d)", 1)
	if ps2, err := ParsePIDStat([]byte(odd)); err != nil || ps2 != ps {
		t.Errorf("odd comm: %+v, %v", ps2, err)
	}
	for _, bad := range []string{"17894 mariadbd S 1", "17894 (m) S 1 2 3", strings.Replace(string(b), " 5903 ", " x ", 1)} {
		if _, err := ParsePIDStat([]byte(bad)); err == nil {
			t.Errorf("ParsePIDStat(%.30q...): no error", bad)
		}
	}
}

func TestCPUSaturated(t *testing.T) {
	for _, c := range []struct {
		busy  []float64
		want  bool
		share float64
	}{
		{nil, false, 0},
		{[]float64{1}, false, 1}, // one sample is too few
		{[]float64{0.95, 0.99}, true, 1},
		{[]float64{0.9, 0.2}, true, 0.5}, // exactly at both thresholds
		{[]float64{0.89, 0.89, 0.89}, false, 0},
		{[]float64{1, 1, 0.5, 0.5, 0.5}, false, 0.4},
		{[]float64{1, 1, 1, 0.5, 0.5}, true, 0.6},
	} {
		got, share := CPUSaturated(c.busy)
		if got != c.want || math.Abs(share-c.share) > 1e-9 {
			t.Errorf("CPUSaturated(%v) = %v, %v; want %v, %v", c.busy, got, share, c.want, c.share)
		}
	}
}

// fileHost serves files from a map that the test changes between reads: the /proc text of
// one moment, then of the next.
type fileHost struct {
	mu    sync.Mutex
	files map[string]string
	reads atomic.Int64
}

func (f *fileHost) Name() string { return "files" }
func (f *fileHost) Run(context.Context, ...string) ([]byte, error) {
	return nil, errors.New("fileHost runs nothing")
}
func (f *fileHost) ReadFile(_ context.Context, p string) ([]byte, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.files[p]
	if !ok {
		return nil, fmt.Errorf("%s: %w", p, os.ErrNotExist)
	}
	return []byte(s), nil
}
func (f *fileHost) Close() error { return nil }
func (f *fileHost) set(p, s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[p] = s
}

func procStat(user, system, idle, iowait, steal uint64) string {
	return fmt.Sprintf("cpu  %d 0 %d %d %d 0 0 %d 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\nprocs_running 3\n", user, system, idle, iowait, steal)
}

func pidStat(utime, stime, start uint64) string {
	return fmt.Sprintf("42 (mysqld) S 1 42 42 0 -1 4194560 1 0 0 0 %d %d 0 0 20 0 27 0 %d 1 1 1", utime, stime, start)
}

func netDev(rx, tx uint64) string {
	return "Inter-|   Receive |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes\n" +
		"    lo: 999999 1 0 0 0 0 0 0 999999 1 0 0 0 0 0 0\n" +
		fmt.Sprintf("  eth0: %d 1 0 0 0 0 0 0 %d 1 0 0 0 0 0 0\n", rx, tx)
}

func byNodeMetric(ss []Sample) map[string]float64 {
	m := map[string]float64{}
	for _, s := range ss {
		m[s.Node+" "+s.Metric] = s.Value
	}
	return m
}

// Two nodes on one host, each in its own namespace: the host's numbers once, under
// host:h1; each node's server CPU and namespace traffic under its name.
func TestHostSamplerDeltas(t *testing.T) {
	fh := &fileHost{files: map[string]string{
		"/proc/stat":       procStat(100, 100, 700, 50, 50),
		"/proc/diskstats":  "   8 0 sda 1 0 1000 0 1 0 2000 0 0 0 0\n   8 1 sda1 1 0 1000 0 1 0 2000 0 0 0 0\n",
		"/proc/42/stat":    pidStat(10, 10, 777),
		"/proc/43/stat":    pidStat(0, 0, 888),
		"/proc/42/net/dev": netDev(0, 0),
		"/proc/43/net/dev": netDev(0, 0),
	}}
	nodes := []Node{
		{Name: "n1", Host: fh, HostName: "h1", Netns: "hb-x-n1", PID: 42, StartTicks: 777},
		{Name: "n2", Host: fh, HostName: "h1", Netns: "hb-x-n2", PID: 43, StartTicks: 888},
	}
	h := NewHost()
	if _, err := h.Start(context.Background(), Config{}, nodes); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	// Over the tick: 1000 ticks of CPU time, 600 busy (incl. 100 steal), 100 iowait.
	fh.set("/proc/stat", procStat(350, 350, 1000, 150, 150))
	fh.set("/proc/diskstats", "   8 0 sda 1 0 3000 0 1 0 6000 0 0 0 0\n   8 1 sda1 1 0 3000 0 1 0 6000 0 0 0 0\n")
	fh.set("/proc/42/stat", pidStat(20, 20, 777)) // 20 ticks = 0.2 s of CPU
	fh.set("/proc/42/net/dev", netDev(1000000, 500000))
	tick := NewTick(time.Now(), time.Second, nodes)
	var all []Sample
	for _, n := range nodes {
		ss, err := h.Sample(context.Background(), tick, n)
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		for _, s := range ss {
			if s.Node == "" {
				s.Node = n.Name // as the Runner does
			}
			all = append(all, s)
		}
	}
	got := byNodeMetric(all)
	exact := map[string]float64{
		"host:h1 " + MetricHostCPUBusy:      0.6,
		"host:h1 " + MetricHostCPUIOWait:    0.1,
		"host:h1 " + MetricHostCPUSteal:     0.1,
		"host:h1 " + MetricHostProcsRunning: 3,
		"host:h1 " + MetricHostCPUs:         2,
		"n2 " + MetricServerCPU:             0,
		"n2 " + MetricNetRx:                 0,
	}
	for k, v := range exact {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	// Rates depend on the wall time between the reads (>= 200 ms, well under 2 s here).
	for k, hi := range map[string]float64{
		"host:h1 " + MetricHostDiskRead:  2000 * 512 / 0.2,
		"host:h1 " + MetricHostDiskWrite: 4000 * 512 / 0.2,
		"n1 " + MetricServerCPU:          0.2 / 0.2,
		"n1 " + MetricNetRx:              1e6 / 0.2,
		"n1 " + MetricNetTx:              5e5 / 0.2,
	} {
		if g := got[k]; g > hi || g < hi/10 {
			t.Errorf("%s = %v, want in (%v/10, %v]", k, g, hi, hi)
		}
	}
	n := 0
	for _, s := range all {
		if IsHostNode(s.Node) {
			n++
		}
		if s.Node == "n2" && strings.HasPrefix(s.Metric, "host_") {
			t.Errorf("host metric under a node: %+v", s)
		}
	}
	if n != 7 {
		t.Errorf("%d host samples, want 7 (once for both nodes): %v", n, all)
	}
	// The server restarted: another start time under the same PID is an error, not its CPU.
	fh.set("/proc/43/stat", pidStat(5, 5, 999))
	ss, err := h.Sample(context.Background(), NewTick(time.Now(), 2*time.Second, nodes), nodes[1])
	if err == nil || !strings.Contains(err.Error(), "no longer the node's server") {
		t.Errorf("restarted server: err %v, samples %v", err, ss)
	}
	// A counter that went down is a new baseline, not a huge or negative value.
	fh.set("/proc/stat", procStat(1, 1, 1, 1, 1))
	ss, _ = h.Sample(context.Background(), NewTick(time.Now(), 3*time.Second, nodes), nodes[0])
	if _, ok := byNodeMetric(ss)["host:h1 "+MetricHostCPUBusy]; ok {
		t.Errorf("busy reported after the counters went down: %v", ss)
	}
}

// A node without a namespace of its own: the host's /proc/net/dev, under host:<name>.
func TestHostSamplerHostNetwork(t *testing.T) {
	fh := &fileHost{files: map[string]string{
		"/proc/stat": procStat(1, 1, 1, 1, 1), "/proc/diskstats": "", "/proc/net/dev": netDev(0, 0),
	}}
	nodes := []Node{{Name: "db1", Host: fh, HostName: "ssh db1"}}
	h := NewHost()
	h.Start(context.Background(), Config{}, nodes)
	fh.set("/proc/net/dev", netDev(100, 100))
	ss, err := h.Sample(context.Background(), NewTick(time.Now(), time.Second, nodes), nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := byNodeMetric(ss)["host:ssh db1 "+MetricNetRx]; !ok {
		t.Errorf("no host network sample: %v", ss)
	}
	if (&Host{}).Supports(Node{Name: "x"}) {
		t.Error("a node without Host is supported")
	}
}

// This machine's real /proc through host.Local, with this test process as the "server":
// a goroutine spinning on one core shows as about one core.
func TestHostSamplerLocal(t *testing.T) {
	stop := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	defer close(stop)
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ParsePIDStat(self)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []Node{{Name: "me", Host: host.Local{}, PID: os.Getpid(), StartTicks: ps.StartTicks}}
	r := NewRunner(Config{Interval: 300 * time.Millisecond}, nodes, []Sampler{NewHost()})
	ctx, cancel := context.WithTimeout(context.Background(), 1100*time.Millisecond)
	defer cancel()
	var ticks [][]Sample
	if err := r.Run(ctx, func(ss []Sample) { ticks = append(ticks, ss) }); err != nil {
		t.Fatal(err)
	}
	if len(ticks) < 2 {
		t.Fatalf("%d ticks", len(ticks))
	}
	last := byNodeMetric(ticks[len(ticks)-1])
	if e := last["me sampler_errors_host"]; e != 0 {
		t.Errorf("%v sampler errors", e)
	}
	for _, k := range []string{MetricHostCPUBusy, MetricHostCPUIOWait, MetricHostCPUSteal} {
		v, ok := last["host:local "+k]
		if !ok || v < 0 || v > 1 {
			t.Errorf("host:local %s = %v (present %v), want 0..1", k, v, ok)
		}
	}
	if v := last["host:local "+MetricHostCPUs]; int(v) != runtime.NumCPU() {
		t.Errorf("cpus %v, want %d", v, runtime.NumCPU())
	}
	// The spinning thread alone is about one core; on a shared machine other processes take
	// most of it (0.3 cores at load 8, 0.02 in one 300 ms tick at load 18), so only: some CPU
	// in some tick, never more than the machine has. The exact arithmetic is
	// TestHostSamplerDeltas'.
	most := 0.0
	for _, tk := range ticks {
		v, ok := byNodeMetric(tk)["me "+MetricServerCPU]
		if ok && (v < 0 || v > float64(runtime.NumCPU())+0.2) {
			t.Errorf("own CPU %v cores, want 0..%d", v, runtime.NumCPU())
		}
		most = max(most, v)
	}
	if most <= 0 {
		t.Errorf("a spinning thread's process showed no CPU in %d ticks", len(ticks))
	}
}

// A server restarted during the run (Node.Server answers with its new process) keeps
// being sampled from a fresh baseline: one tick without a value, then its CPU again.
func TestHostSamplerFollowsRestartedServer(t *testing.T) {
	fh := &fileHost{files: map[string]string{
		"/proc/stat": procStat(1, 1, 1, 1, 1), "/proc/diskstats": "", "/proc/net/dev": netDev(0, 0),
		"/proc/42/stat": pidStat(0, 0, 777),
	}}
	var mu sync.Mutex
	pid, start := 42, uint64(777)
	n := Node{Name: "n1", Host: fh, Server: func() (int, uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		return pid, start, nil
	}}
	h := NewHost()
	h.Start(context.Background(), Config{}, []Node{n})
	cpu := func() (float64, bool, error) {
		ss, err := h.Sample(context.Background(), NewTick(time.Now(), time.Second, []Node{n}), n)
		for _, s := range ss {
			if s.Metric == MetricServerCPU {
				return s.Value, true, err
			}
		}
		return 0, false, err
	}
	time.Sleep(100 * time.Millisecond)
	fh.set("/proc/42/stat", pidStat(5, 5, 777))
	if v, ok, err := cpu(); !ok || v <= 0 || err != nil {
		t.Fatalf("before the restart: %v %v %v", v, ok, err)
	}
	// Restarted: pid 42 is gone, the server is pid 50 now.
	mu.Lock()
	pid, start = 50, 999
	mu.Unlock()
	fh.set("/proc/50/stat", pidStat(1, 1, 999))
	if _, ok, err := cpu(); ok || err != nil {
		t.Errorf("first read of the new process: value %v, err %v; want no value (new baseline), no error", ok, err)
	}
	time.Sleep(100 * time.Millisecond)
	fh.set("/proc/50/stat", pidStat(11, 1, 999))
	if v, ok, err := cpu(); !ok || v <= 0 || err != nil {
		t.Errorf("after the restart: %v %v %v", v, ok, err)
	}
	// No server recorded (stopped): no value, no error from the server part.
	mu.Lock()
	pid = 0
	mu.Unlock()
	if _, ok, err := cpu(); ok || err != nil {
		t.Errorf("no server: value %v err %v", ok, err)
	}
}
