package sampler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Metric names of the host sampler. Machine-wide values are emitted once per tick per
// distinct host, under the node name HostNode(Node.HostName) ("host:local"), never once per
// node: nodes sharing a machine do not multiply its numbers. Per-node values (the node's
// own server process, the node's own network namespace) are under the node's name.
const (
	// MetricHostCPUBusy is the fraction (0..1) of all CPUs' time in the tick that was not
	// idle and not waiting for I/O: 1 - (idle+iowait)/total over the deltas of /proc/stat's
	// "cpu" line (user, nice, system, irq, softirq and steal count as busy).
	MetricHostCPUBusy = "host_cpu_busy_fraction"
	// MetricHostCPUIOWait is the fraction (0..1) of all CPUs' time spent idle with I/O
	// outstanding (/proc/stat iowait).
	MetricHostCPUIOWait = "host_cpu_iowait_fraction"
	// MetricHostCPUSteal is the fraction (0..1) of all CPUs' time the hypervisor ran
	// something else (/proc/stat steal); it is part of MetricHostCPUBusy.
	MetricHostCPUSteal = "host_cpu_steal_fraction"
	// MetricHostProcsRunning is /proc/stat procs_running at the read: runnable threads,
	// the reading one included.
	MetricHostProcsRunning = "host_procs_running"
	// MetricHostCPUs is the number of CPUs in /proc/stat (cpuN lines).
	MetricHostCPUs = "host_cpus"
	// MetricHostDiskRead and MetricHostDiskWrite are bytes per second read from / written
	// to whole disks (/proc/diskstats sectors x 512; partitions, loop, ram, zram, dm-*
	// and md* devices are left out so nothing is counted twice).
	MetricHostDiskRead  = "host_disk_read_bytes_ps"
	MetricHostDiskWrite = "host_disk_write_bytes_ps"
	// MetricNetRx and MetricNetTx are bytes per second received / sent on every interface
	// but lo of a network namespace (/proc/net/dev): under a node's name its own namespace
	// (a sandbox node in a network namespace, read as /proc/<server pid>/net/dev), under
	// "host:<name>" the host's (nodes without a namespace of their own).
	MetricNetRx = "net_rx_bytes_ps"
	MetricNetTx = "net_tx_bytes_ps"
	// MetricServerCPU is the node's own server process's CPU (utime+stime of
	// /proc/PID/stat) in cores: 1 is one core busy for the whole tick, 2 two cores.
	MetricServerCPU = "mysqld_cpu_cores"
)

// HostNodePrefix starts the node name under which machine-wide samples are written.
const HostNodePrefix = "host:"

// HostNode is the node name of machine-wide samples of the host called name ("host:local").
func HostNode(name string) string { return HostNodePrefix + name }

// IsHostNode reports whether a sample's node name is a host's (HostNode), not a server's.
func IsHostNode(node string) bool { return strings.HasPrefix(node, HostNodePrefix) }

// The CPU-saturation rule: a host is CPU-saturated during a run when at least
// CPUSaturatedShare of its MetricHostCPUBusy samples taken while the workload was measured
// are at or above CPUSaturatedBusy (and there are at least CPUSaturatedMinSamples of them).
const (
	CPUSaturatedBusy       = 0.90
	CPUSaturatedShare      = 0.5
	CPUSaturatedMinSamples = 2
)

// CPUSaturated applies the CPU-saturation rule to busy fractions (0..1, one per tick):
// saturated is the verdict, share the fraction of samples at or above CPUSaturatedBusy
// (0 without samples).
func CPUSaturated(busy []float64) (saturated bool, share float64) {
	if len(busy) == 0 {
		return false, 0
	}
	n := 0
	for _, b := range busy {
		if b >= CPUSaturatedBusy {
			n++
		}
	}
	share = float64(n) / float64(len(busy))
	return len(busy) >= CPUSaturatedMinSamples && share >= CPUSaturatedShare, share
}

// userHZ is the unit of /proc/PID/stat utime and stime: USER_HZ, 100 on every Linux
// architecture habench runs on (x86-64, arm64).
const userHZ = 100

// Host samples each node's host from /proc through Node.Host, so the same code reads this
// machine for sandboxes and a user's host over SSH:
//
//	host_cpu_busy_fraction    1 - (idle+iowait)/total of the deltas of /proc/stat's cpu line
//	host_cpu_iowait_fraction  iowait/total
//	host_cpu_steal_fraction   steal/total
//	host_procs_running            procs_running (the reader included)
//	host_cpus                 cpuN lines of /proc/stat
//	host_disk_read_bytes_ps   delta of sectors read x 512 / seconds, whole disks only
//	host_disk_write_bytes_ps  the same for sectors written
//	net_rx_bytes_ps           delta of received bytes / seconds, all interfaces but lo
//	net_tx_bytes_ps           the same for sent bytes
//	mysqld_cpu_cores          delta of utime+stime of /proc/PID/stat / USER_HZ / seconds
//
// Machine-wide metrics (host_* and, for nodes without a namespace of their own, net_*)
// are read once per tick per distinct Node.HostName, by the first node of the tick on that
// host, and emitted under HostNode(HostName). net_* of a node with its own network namespace
// (Node.Netns, Node.PID) and mysqld_cpu_cores (Node.PID, or Node.Server's answer on each
// read) are the node's; a new server process starts a new baseline.
//
// Deltas count from the baseline read in Start; a value without a baseline (the first
// read after a failed one) is left out, never reported as 0. A counter that went down
// (a reboot, a restarted server) starts a new baseline. Supports nodes with a Host. Sample
// errors when a file cannot be read or parsed, or when Node.PID is no longer the node's
// server (its start time differs from Node.StartTicks: restarted or gone).
type Host struct {
	mu   sync.Mutex
	prev map[string]hostRead // key -> previous read
}

// hostRead is one read of cumulative counters and when it was taken.
type hostRead struct {
	at   time.Time
	vals []uint64
}

// NewHost returns the host sampler.
func NewHost() *Host { return &Host{prev: map[string]hostRead{}} }

// Name is "host".
func (*Host) Name() string { return "host" }

// Supports nodes whose host can be read.
func (*Host) Supports(n Node) bool { return n.Host != nil }

// Start reads the baselines of every host and node, so the first tick has deltas. A read
// that fails is not an error here (the first Sample reports it).
func (h *Host) Start(ctx context.Context, cfg Config, nodes []Node) (func(), error) {
	cfg = cfg.withDefaults()
	t := NewTick(time.Now(), 0, nodes)
	for _, n := range nodes {
		if h.Supports(n) {
			cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			_, _ = h.Sample(cctx, t, n)
			cancel()
		}
	}
	return nil, nil
}

// Sample returns the metrics listed on Host for node n (machine-wide ones only when n is
// the first node of the tick on its host).
func (h *Host) Sample(ctx context.Context, t *Tick, n Node) ([]Sample, error) {
	var out []Sample
	var errs []error
	if h.representative(t, n) {
		s, err := h.machine(ctx, n)
		out = append(out, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if n.Server != nil {
		pid, ticks, err := n.Server()
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: server process: %w", n.Name, err))
		}
		n.PID, n.StartTicks = pid, ticks
	}
	if n.PID > 0 {
		s, err := h.server(ctx, n)
		out = append(out, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// hostName is n.HostName, "local" when empty.
func hostName(n Node) string {
	if n.HostName == "" {
		return "local"
	}
	return n.HostName
}

// representative reports whether n is the first node of the tick on its host.
func (*Host) representative(t *Tick, n Node) bool {
	for _, o := range t.Nodes {
		if o.Host != nil && hostName(o) == hostName(n) {
			return o.Name == n.Name
		}
	}
	return true
}

// delta stores cur under key and returns the per-counter differences and the seconds
// since the previous read; ok is false without a usable baseline.
func (h *Host) delta(key string, at time.Time, cur []uint64) (d []float64, secs float64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, had := h.prev[key]
	h.prev[key] = hostRead{at: at, vals: cur}
	if !had || len(prev.vals) != len(cur) {
		return nil, 0, false
	}
	secs = at.Sub(prev.at).Seconds()
	if secs <= 0 {
		return nil, 0, false
	}
	d = make([]float64, len(cur))
	for i := range cur {
		if cur[i] < prev.vals[i] {
			return nil, 0, false // went down: a new baseline
		}
		d[i] = float64(cur[i] - prev.vals[i])
	}
	return d, secs, true
}

// machine reads the machine-wide files of n's host.
func (h *Host) machine(ctx context.Context, n Node) ([]Sample, error) {
	hn := "host " + hostName(n)
	var out []Sample
	var errs []error
	if b, err := n.Host.ReadFile(ctx, "/proc/stat"); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", hn, err))
	} else if st, err := ParseProcStat(b); err != nil {
		errs = append(errs, fmt.Errorf("%s: /proc/stat: %w", hn, err))
	} else {
		out = append(out, Sample{Metric: MetricHostProcsRunning, Value: float64(st.ProcsRunning)},
			Sample{Metric: MetricHostCPUs, Value: float64(st.CPUs)})
		c := st.CPU
		if d, _, ok := h.delta(hn+" cpu", time.Now(), []uint64{c.Busy(), c.Idle, c.IOWait, c.Steal}); ok {
			if total := d[0] + d[1] + d[2]; total > 0 {
				out = append(out, Sample{Metric: MetricHostCPUBusy, Value: d[0] / total},
					Sample{Metric: MetricHostCPUIOWait, Value: d[2] / total},
					Sample{Metric: MetricHostCPUSteal, Value: d[3] / total})
			}
		}
	}
	if b, err := n.Host.ReadFile(ctx, "/proc/diskstats"); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", hn, err))
	} else if r, w, err := ParseDiskstats(b); err != nil {
		errs = append(errs, fmt.Errorf("%s: /proc/diskstats: %w", hn, err))
	} else if d, secs, ok := h.delta(hn+" disk", time.Now(), []uint64{r, w}); ok {
		out = append(out, Sample{Metric: MetricHostDiskRead, Value: d[0] / secs},
			Sample{Metric: MetricHostDiskWrite, Value: d[1] / secs})
	}
	if n.Netns == "" {
		s, err := h.net(ctx, n, "/proc/net/dev", hn+" net")
		out = append(out, s...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", hn, err))
		}
	}
	for i := range out {
		out[i].Node = HostNode(hostName(n))
	}
	return out, errors.Join(errs...)
}

// net reads one /proc/net/dev.
func (h *Host) net(ctx context.Context, n Node, path, key string) ([]Sample, error) {
	b, err := n.Host.ReadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	rx, tx, err := ParseNetDev(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d, secs, ok := h.delta(key, time.Now(), []uint64{rx, tx})
	if !ok {
		return nil, nil
	}
	return []Sample{{Metric: MetricNetRx, Value: d[0] / secs}, {Metric: MetricNetTx, Value: d[1] / secs}}, nil
}

// server reads n's own server process and, when n has a namespace of its own, that
// namespace's interfaces.
func (h *Host) server(ctx context.Context, n Node) ([]Sample, error) {
	path := fmt.Sprintf("/proc/%d/stat", n.PID)
	b, err := n.Host.ReadFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("node %s: server pid %d: %w", n.Name, n.PID, err)
	}
	ps, err := ParsePIDStat(b)
	if err != nil {
		return nil, fmt.Errorf("node %s: %s: %w", n.Name, path, err)
	}
	if n.StartTicks != 0 && ps.StartTicks != n.StartTicks {
		return nil, fmt.Errorf("node %s: pid %d started at tick %d, not %d: no longer the node's server (restarted or gone)", n.Name, n.PID, ps.StartTicks, n.StartTicks)
	}
	var out []Sample
	key := fmt.Sprintf("node %s pid %d", n.Name, n.PID)
	if d, secs, ok := h.delta(key, time.Now(), []uint64{ps.UTime + ps.STime}); ok {
		out = append(out, Sample{Metric: MetricServerCPU, Value: d[0] / userHZ / secs})
	}
	if n.Netns != "" {
		s, err := h.net(ctx, n, fmt.Sprintf("/proc/%d/net/dev", n.PID), key+" net")
		if err != nil {
			return out, fmt.Errorf("node %s: %w", n.Name, err)
		}
		out = append(out, s...)
	}
	return out, nil
}

// CPUTimes are the cumulative times of /proc/stat's "cpu" line, in USER_HZ ticks (the
// unit does not matter for fractions). Guest time is already part of User and Nice.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Busy is the time neither idle nor waiting for I/O: user, nice, system, irq, softirq, steal.
func (c CPUTimes) Busy() uint64 {
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
}

// ProcStat is what the host sampler reads from /proc/stat.
type ProcStat struct {
	CPU          CPUTimes // the aggregate "cpu" line
	CPUs         int      // cpuN lines
	ProcsRunning int      // procs_running
}

// ParseProcStat parses /proc/stat. Error when the "cpu" line is missing or has fewer than
// the 8 fields since Linux 2.6.11, or procs_running is missing or not a number.
func ParseProcStat(b []byte) (ProcStat, error) {
	var st ProcStat
	seenCPU, seenRun := false, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "cpu":
			if len(f) < 9 {
				return st, fmt.Errorf("cpu line has %d fields, want at least 8 values", len(f))
			}
			var v [8]uint64
			for i := range v {
				x, err := strconv.ParseUint(f[i+1], 10, 64)
				if err != nil {
					return st, fmt.Errorf("cpu line field %d = %q: not a number", i+1, f[i+1])
				}
				v[i] = x
			}
			st.CPU = CPUTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
			seenCPU = true
		case strings.HasPrefix(f[0], "cpu"):
			st.CPUs++
		case f[0] == "procs_running" && len(f) >= 2:
			x, err := strconv.Atoi(f[1])
			if err != nil {
				return st, fmt.Errorf("procs_running = %q: not a number", f[1])
			}
			st.ProcsRunning, seenRun = x, true
		}
	}
	if !seenCPU {
		return st, errors.New("no cpu line")
	}
	if !seenRun {
		return st, errors.New("no procs_running line")
	}
	return st, nil
}

// ParseDiskstats sums sectors read and written over the whole disks of /proc/diskstats and
// returns them in bytes (a diskstats sector is always 512 bytes). Left out, so nothing
// counts twice: partitions (a name that is another listed device's name plus a number,
// "sda1", "nvme0n1p1", "mmcblk0p2"), and loop, ram, zram, dm-*, md*, sr* and fd* devices.
// Error for a line with fewer than 10 fields or a count that is not a number.
func ParseDiskstats(b []byte) (readBytes, writeBytes uint64, err error) {
	type dev struct {
		name   string
		rs, ws uint64
	}
	var devs []dev
	names := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 10 {
			return 0, 0, fmt.Errorf("line %d has %d fields, want at least 10", i+1, len(f))
		}
		rs, err1 := strconv.ParseUint(f[5], 10, 64)
		ws, err2 := strconv.ParseUint(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("line %d (%s): sectors %q, %q: not numbers", i+1, f[2], f[5], f[9])
		}
		devs = append(devs, dev{f[2], rs, ws})
		names[f[2]] = true
	}
	for _, d := range devs {
		if !wholeDisk(d.name, names) {
			continue
		}
		readBytes += d.rs * 512
		writeBytes += d.ws * 512
	}
	return readBytes, writeBytes, nil
}

// wholeDisk reports whether a diskstats device is a disk of its own (see ParseDiskstats).
func wholeDisk(name string, names map[string]bool) bool {
	for _, p := range []string{"loop", "ram", "zram", "dm-", "md", "sr", "fd"} {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	base := strings.TrimRight(name, "0123456789")
	if base == name || base == "" {
		return true
	}
	if names[base] {
		return false // sda1 of sda
	}
	if strings.HasSuffix(base, "p") && names[strings.TrimSuffix(base, "p")] {
		return false // nvme0n1p1 of nvme0n1
	}
	return true
}

// ParseNetDev sums received and sent bytes over every interface of /proc/net/dev but lo.
// Error for an interface line without the 16 counters or with a count that is not a number.
func ParseNetDev(b []byte) (rxBytes, txBytes uint64, err error) {
	for i, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.Contains(name, "|") {
			continue // header lines
		}
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if len(f) < 16 {
			return 0, 0, fmt.Errorf("line %d (%s) has %d counters, want 16", i+1, name, len(f))
		}
		rx, err1 := strconv.ParseUint(f[0], 10, 64)
		tx, err2 := strconv.ParseUint(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("line %d (%s): bytes %q, %q: not numbers", i+1, name, f[0], f[8])
		}
		if name == "lo" {
			continue
		}
		rxBytes += rx
		txBytes += tx
	}
	return rxBytes, txBytes, nil
}

// PIDStat is what the host sampler reads from /proc/PID/stat: user and system CPU time in
// USER_HZ ticks and the start time in clock ticks since boot (field 22).
type PIDStat struct {
	UTime, STime, StartTicks uint64
}

// ParsePIDStat parses /proc/PID/stat (the command name may hold spaces and parentheses:
// fields are counted after the last ')'). Error when fields are missing or not numbers.
func ParsePIDStat(b []byte) (PIDStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return PIDStat{}, errors.New("no ')' after the command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return PIDStat{}, fmt.Errorf("%d fields after the command name, want at least 20", len(f))
	}
	var v [3]uint64
	for k, idx := range []int{11, 12, 19} { // fields 14 utime, 15 stime, 22 starttime
		x, err := strconv.ParseUint(f[idx], 10, 64)
		if err != nil {
			return PIDStat{}, fmt.Errorf("field %d = %q: not a number", idx+3, f[idx])
		}
		v[k] = x
	}
	return PIDStat{UTime: v[0], STime: v[1], StartTicks: v[2]}, nil
}
