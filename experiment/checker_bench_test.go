//go:build bench

package experiment_test

// What a checker costs the run beside it (issue 20: one checker thread beside an 8-thread
// OLTP run costs it at most 5% of its TPS). Run as root:
//
//	go test -tags bench -count=1 -run '^$' -bench CheckerCost -benchtime 1x -v ./experiment/
//
// HABENCH_BENCH_TIME (seconds per run, default 10), HABENCH_BENCH_THREADS (OLTP threads,
// default 8) and HABENCH_BENCH_ROUNDS (without/with pairs, default 2).

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// BenchmarkCheckerCost runs oltp_read_write (8 threads, 4 tables of 10000 rows) on a
// single MariaDB sandbox without a checker (A), with one register checker thread at
// REPEATABLE READ on 4 keys as fast as it goes (B), and with the same thread capped at
// rate 50/s (C), A/B/C in each round, and reports the TPS of each (transactions over
// measured time, summed over the rounds), ratio-uncapped and ratio-capped (with/without;
// the budget: at least 0.95) and the checkers' committed operations per second.
// It prints; nothing in it passes or fails on a number.
func BenchmarkCheckerCost(b *testing.B) {
	secs := benchEnvInt("HABENCH_BENCH_TIME", 10)
	threads := benchEnvInt("HABENCH_BENCH_THREADS", 8)
	rounds := benchEnvInt("HABENCH_BENCH_ROUNDS", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+time.Duration(3*rounds*(secs+30))*time.Second)
	defer cancel()
	s := testenv.Store(b)
	c, err := s.Deploy(ctx, testenv.Spec(b, testenv.Name(b, "bck"), topology.Single, 1, topology.MariaDB))
	if err != nil {
		b.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_read_write")
	o := smallOptions(threads, time.Duration(secs)*time.Second)
	o.Tables, o.TableSize, o.Warmup = 4, 10000, 2*time.Second
	tg := target(c)
	if err := wl.Prepare(ctx, tg, o, &strings.Builder{}); err != nil {
		b.Fatal(err)
	}
	var trx [3]int64
	var sec [3]float64
	var checkerOps [3]int64
	var ratios []string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 1; r <= rounds; r++ {
			var tps [3]float64
			for mode := range 3 {
				bench := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: b.TempDir(), Stdout: &strings.Builder{}}
				if mode > 0 {
					bench.Checker = &scenario.CheckerSpec{Workload: "register", Threads: 1, Keys: 4, Isolation: "REPEATABLE-READ"}
				}
				if mode == 2 {
					bench.Checker.Rate = 50
				}
				out, err := bench.Run(ctx)
				if err != nil {
					b.Fatalf("round %d mode %d: %v", r, mode, err)
				}
				trx[mode] += out.Result.Transactions
				sec[mode] += out.Result.TotalTime.Seconds()
				tps[mode] = out.Result.TPS()
				if mode > 0 {
					if out.Summary.Checks == nil || out.Summary.Checks.OK == 0 {
						b.Fatalf("round %d: the checker committed nothing: %+v", r, out.Summary.Checks)
					}
					checkerOps[mode] += int64(out.Summary.Checks.OK)
				}
			}
			ratios = append(ratios, fmt.Sprintf("%.3f/%.3f", tps[1]/tps[0], tps[2]/tps[0]))
			b.Logf("round %d: TPS without %.1f, with a checker thread %.1f, capped at 50/s %.1f", r, tps[0], tps[1], tps[2])
		}
	}
	var tps, ops [3]float64
	for m := range 3 {
		tps[m], ops[m] = float64(trx[m])/sec[m], float64(checkerOps[m])/sec[m]
	}
	b.ReportMetric(tps[0], "tps-without")
	b.ReportMetric(tps[1]/tps[0], "ratio-uncapped")
	b.ReportMetric(tps[2]/tps[0], "ratio-capped")
	b.Logf("oltp_read_write %d threads, %d s x %d rounds: TPS without a checker %.1f; with one register checker thread %.1f (ratio %.3f, %.1f checker ops/s); capped at rate 50/s %.1f (ratio %.3f, %.1f ops/s); rounds uncapped/capped %s; budget >= 0.95",
		threads, secs, rounds, tps[0], tps[1], tps[1]/tps[0], ops[1], tps[2], tps[2]/tps[0], ops[2], strings.Join(ratios, ", "))
}
