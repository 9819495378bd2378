//go:build bench

package workload

// Run with:
//
//	go test -tags bench -run '^$' -bench OltpReadWriteVsSysbench -benchtime=1x ./workload/
//
// HABENCH_BENCH_TIME (seconds, default 5), HABENCH_BENCH_THREADS (default 4)
// and HABENCH_BENCH_ROUNDS (default 2) tune it.

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkOltpReadWriteVsSysbench runs sysbench 1.0.20 and habench with the
// same options against the same server, alternating, and reports the TPS
// ratio habench/sysbench for both statement modes.
func BenchmarkOltpReadWriteVsSysbench(b *testing.B) {
	needSysbench(b)
	secs := envInt("HABENCH_BENCH_TIME", 5)
	threads := envInt("HABENCH_BENCH_THREADS", 4)
	rounds := envInt("HABENCH_BENCH_ROUNDS", 2)
	s := testserver.StartMariaDB(b)
	tg := serverTarget(s, "sbtest")
	rw, _ := Lookup("oltp_read_write")
	o := DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time = 2, 10000, threads, time.Duration(secs)*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds*4*(secs+10))*time.Second)
	defer cancel()
	if err := rw.Prepare(ctx, tg, o, nil); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{PSAuto, PSDisable} {
		var sbTrx, hbTrx float64
		var sbTime, hbTime float64
		for round := 0; round < rounds; round++ {
			args := []string{"oltp_read_write", "--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(s.Port),
				"--mysql-user=root", "--mysql-db=sbtest", "--tables=2", "--table-size=10000",
				"--threads=" + strconv.Itoa(threads), "--time=" + strconv.Itoa(secs), "--rand-type=uniform",
				"--db-ps-mode=" + mode, "run"}
			out := runSysbench(b, ctx, args...)
			p := parseOutput(&testing.T{}, out)
			if len(p.summary) != len(reSummary) {
				b.Fatalf("cannot parse sysbench output:\n%s", out)
			}
			sr := resultFromSummary(&testing.T{}, p.summary)
			sbTrx += float64(sr.Transactions)
			sbTime += sr.TotalTime.Seconds()

			ro := o
			ro.PSMode = mode
			res, err := rw.Run(ctx, tg, ro, nil)
			if err != nil {
				b.Fatal(err)
			}
			hbTrx += float64(res.Transactions)
			hbTime += res.TotalTime.Seconds()
			b.Logf("%s round %d: sysbench %.1f tps, habench %.1f tps (p95 %.2f ms)", mode, round+1,
				float64(sr.Transactions)/sr.TotalTime.Seconds(), res.TPS(), res.LatencyP95)
		}
		sb, hb := sbTrx/sbTime, hbTrx/hbTime
		b.ReportMetric(sb, "sysbench-tps-"+mode)
		b.ReportMetric(hb, "habench-tps-"+mode)
		b.ReportMetric(hb/sb, "ratio-"+mode)
	}
}
