//go:build bench

package netem

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// linkThreads finds the userspace link's threads in this process: by name (hbnetem: the
// link thread, which delivers); for a link that does not name its threads, the one thread
// sleeping in ppoll (syscall 271 on amd64), its delivery thread.
func linkThreads() (deliver string, all []string) {
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + t.Name() + "/comm")
		switch name := strings.TrimSpace(string(b)); {
		case name == "hbnetem":
			deliver = t.Name()
			all = append(all, t.Name())
		}
	}
	if deliver != "" {
		return deliver, all
	}
	for range 50 {
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/syscall")
			if f := strings.Fields(string(b)); err == nil && len(f) > 0 && f[0] == "271" {
				return t.Name(), []string{t.Name()}
			}
		}
		time.Sleep(2 * time.Millisecond)
		tasks, _ = os.ReadDir("/proc/self/task")
	}
	return "", nil
}

// threadCPU is the CPU time of the given threads of this process (schedstat).
func threadCPU(tids []string) time.Duration {
	var sum time.Duration
	for _, tid := range tids {
		var run uint64
		if b, err := os.ReadFile("/proc/self/task/" + tid + "/schedstat"); err == nil {
			fmt.Sscan(string(b), &run)
		}
		sum += time.Duration(run)
	}
	return sum
}

func processCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// handshakes opens n TCP connections from a socket in from's namespace to a listener on
// to's address (as MeasureRTT does) and returns each handshake's time.
func handshakes(b *testing.B, from Endpoint, addr string, n int) []time.Duration {
	var out []time.Duration
	err := InNetns(from.Netns, func() error {
		for range n {
			d := net.Dialer{Timeout: time.Second}
			t0 := time.Now()
			c, err := d.Dial("tcp4", addr)
			el := time.Since(t0)
			if err != nil {
				return err
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			out = append(out, el)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkUserspaceAddedRTT measures, between two throwaway namespaces, the round trip
// the userspace link adds for one-way delays of 0.6 ms and 5 ms per direction (requested
// RTT 1.2 ms and 10 ms): TCP handshake time n1->n2 (as MeasureRTT times it) minus the
// handshake time through the link with no impairment. The three are measured in
// interleaved rounds (HABENCH_BENCH_ROUNDS, default 3) and pooled, so a change in the
// machine's state hits the baseline and the delays alike. Metrics: requested-RTT-us,
// added-median-us, added-p99-us (p99 minus the baseline median), err-median-us and
// err-median-pct (added median minus requested), deliver-cpu-pct (the link's delivery
// thread, while measuring that delay) and process-cpu-pct.
// Run: go test -tags bench -bench . ./netem
func BenchmarkUserspaceAddedRTT(b *testing.B) {
	eps := testNet(b, 2)
	u, err := NewUserspace(eps, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { u.Close() })
	if rt, ok := any(u).(interface{ Realtime() bool }); ok {
		b.Logf("link thread SCHED_FIFO: %v", rt.Realtime())
	}
	var ln net.Listener
	if err := InNetns(eps[1].Netns, func() error {
		ln, err = net.Listen("tcp4", net.JoinHostPort(eps[1].Addr.String(), "0"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("HABENCH_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	type run struct {
		oneWay  time.Duration
		samples int
		rtts    []time.Duration
		deliver time.Duration // CPU
		process time.Duration // CPU
		wall    time.Duration
		lateSum float64 // ns
		lateN   int64
	}
	runs := []*run{{0, 100, nil, 0, 0, 0, 0, 0}, {600 * time.Microsecond, 100, nil, 0, 0, 0, 0, 0}, {5 * time.Millisecond, 60, nil, 0, 0, 0, 0, 0}}
	deliver, _ := linkThreads()
	var maxLate time.Duration
	for range rounds {
		for _, r := range runs {
			var spec *Spec
			if r.oneWay > 0 {
				spec, _ = NewSpec([]string{"n1", "n2"})
				spec.SetNode("n1", Impairment{Delay: r.oneWay})
				spec.SetNode("n2", Impairment{Delay: r.oneWay})
			}
			if err := u.Update(spec); err != nil {
				b.Fatal(err)
			}
			m0, _, c0 := u.Lateness()
			d0, p0, t0 := threadCPU([]string{deliver}), processCPU(), time.Now()
			r.rtts = append(r.rtts, handshakes(b, eps[0], ln.Addr().String(), r.samples)...)
			r.wall += time.Since(t0)
			r.deliver += threadCPU([]string{deliver}) - d0
			r.process += processCPU() - p0
			m1, mx, c1 := u.Lateness()
			r.lateSum += float64(m1)*float64(c1) - float64(m0)*float64(c0)
			r.lateN += c1 - c0
			maxLate = max(maxLate, mx)
		}
	}
	q := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	base := q(runs[0].rtts, 0.5)
	b.Logf("%d rounds; baseline n1->n2 handshake: median %v p99 %v over %d; delivery lateness max %v", rounds, base, q(runs[0].rtts, 0.99), len(runs[0].rtts), maxLate)
	for _, r := range runs[1:] {
		b.Run(r.oneWay.String(), func(b *testing.B) {
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			req := 2 * r.oneWay
			med, p99 := q(r.rtts, 0.5), q(r.rtts, 0.99)
			b.ReportMetric(us(req), "requested-RTT-us")
			b.ReportMetric(us(med-base), "added-median-us")
			b.ReportMetric(us(p99-base), "added-p99-us")
			b.ReportMetric(us(med-base-req), "err-median-us")
			b.ReportMetric(100*float64(med-base-req)/float64(req), "err-median-pct")
			if deliver != "" {
				b.ReportMetric(100*float64(r.deliver)/float64(r.wall), "deliver-cpu-pct")
			}
			b.ReportMetric(100*float64(r.process)/float64(r.wall), "process-cpu-pct")
			late := time.Duration(0)
			if r.lateN > 0 {
				late = time.Duration(r.lateSum / float64(r.lateN))
			}
			b.Logf("one-way %v: requested RTT %v, achieved median %v p99 %v over %d (baseline median %v); delivery lateness mean %v over %d packets; CPU: delivery thread %.1f%%, process %.1f%%",
				r.oneWay, req, med, p99, len(r.rtts), base, late, r.lateN, 100*float64(r.deliver)/float64(r.wall), 100*float64(r.process)/float64(r.wall))
		})
	}
}

// BenchmarkUserspaceThroughput measures TCP bulk throughput n1->n2 through the userspace
// link with no impairment (the cost of moving every packet through this process).
// Reported metric: MB/s (10^6 bytes per second).
func BenchmarkUserspaceThroughput(b *testing.B) {
	eps := testNet(b, 2)
	u, err := NewUserspace(eps, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { u.Close() })
	const size = 32 << 20
	for i := 0; i < b.N; i++ {
		el, err := bulkTransfer(eps[0], eps[1], size, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(size)/el.Seconds()/1e6, "MB/s")
	}
}
