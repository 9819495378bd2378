package workload

import (
	"bytes"
	"context"
	"github.com/habench/habench/internal/testenv/prereq"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

const sysbenchBin = "/usr/bin/sysbench"

func needSysbench(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(sysbenchBin); err != nil {
		prereq.Missing(t, "%s missing (apt-get install sysbench, or `make deps`): %v", sysbenchBin, err)
	}
}

// sysbenchArgs are the connection and size options for the real sysbench.
func sysbenchArgs(s *testserver.Server, test string, extra ...string) []string {
	a := []string{test, "--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(s.Port),
		"--mysql-user=root", "--mysql-db=sbtest", "--tables=2", "--table-size=1000"}
	return append(a, extra...)
}

func runSysbench(t testing.TB, ctx context.Context, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, sysbenchBin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sysbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestSysbenchCompatibility proves that the real sysbench 1.0.20 runs on
// tables prepared by habench, that habench runs on tables prepared by
// sysbench, and that a live sysbench summary has our layout.
func TestSysbenchCompatibility(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server tests skipped in -short mode")
	}
	needSysbench(t)
	s := testserver.StartMariaDB(t)
	tg := serverTarget(s, "sbtest")
	rw := mustLookup(t, "oltp_read_write")
	o := DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time = 2, 1000, 2, 2*time.Second

	t.Run("sysbench_runs_on_habench_tables", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := rw.Prepare(ctx, tg, o, nil); err != nil {
			t.Fatal(err)
		}
		out := runSysbench(t, ctx, sysbenchArgs(s, "oltp_read_write", "--threads=2", "--time=2", "--rand-type=uniform", "run")...)
		p := parseOutput(t, out)
		if len(p.summary) != len(reSummary) {
			t.Fatalf("sysbench output parsed %d of %d summary keys:\n%s", len(p.summary), len(reSummary), out)
		}
		sres := resultFromSummary(t, p.summary)
		if sres.Transactions < 10 {
			t.Fatalf("sysbench ran %d transactions on habench's tables:\n%s", sres.Transactions, out)
		}
		if sres.IgnoredErrors == 0 && (sres.Reads != 14*sres.Transactions || sres.Writes != 4*sres.Transactions || sres.Others != 2*sres.Transactions) {
			t.Errorf("sysbench r/w/o %d/%d/%d for %d transactions on habench's tables (a missing id counts a DELETE as other)",
				sres.Reads, sres.Writes, sres.Others, sres.Transactions)
		}
		// The live sysbench summary and ours, printed from the same values,
		// have the same layout.
		var b bytes.Buffer
		so := o
		so.Percentile = atof(t, p.summary["pct"][0])
		PrintSummary(&b, sres, so)
		assertSameLayout(t, strings.Split(b.String(), "\n"), p.block)
		if err := rw.Cleanup(ctx, tg, o, nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("habench_runs_on_sysbench_tables", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		runSysbench(t, ctx, sysbenchArgs(s, "oltp_read_write", "--threads=2", "prepare")...)
		defer runSysbench(t, context.Background(), sysbenchArgs(s, "oltp_read_write", "cleanup")...)
		for _, mode := range []string{PSAuto, PSDisable} {
			ro := o
			ro.PSMode = mode
			res, err := rw.Run(ctx, tg, ro, nil)
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			checkMix(t, res, 14, 4, 2)
			t.Logf("habench (%s) on sysbench's tables: %d transactions, %.0f tps", mode, res.Transactions, res.TPS())
		}
	})
}

// distLua prints, for 200000 draws of sysbench.rand.default(1, 10000), the
// share of each tenth of the range and of the central 1% (4951..5050).
const distLua = `
function event()
  local n, c = 200000, 0
  local dec = {0,0,0,0,0,0,0,0,0,0}
  for i = 1, n do
    local v = sysbench.rand.default(1, 10000)
    local d = math.floor((v - 1) / 1000) + 1
    dec[d] = dec[d] + 1
    if v >= 4951 and v <= 5050 then c = c + 1 end
  end
  local s = ""
  for i = 1, 10 do s = s .. string.format("%.4f ", dec[i] / n) end
  print("dist " .. s .. string.format("%.4f", c / n))
end
`

// TestDistributionsMatchSysbench draws from sysbench 1.0.20's own generators
// (through a Lua script) and from ours, and compares the shares per tenth of
// the range and of the central 1%.
func TestDistributionsMatchSysbench(t *testing.T) {
	needSysbench(t)
	script := t.TempDir() + "/dist.lua"
	if err := os.WriteFile(script, []byte(distLua), 0o644); err != nil {
		t.Fatal(err)
	}
	// sysbench 1.0.20 has no zipfian.
	for _, dist := range []string{RandUniform, RandSpecial, RandGaussian, RandPareto} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out := runSysbench(t, ctx, "--rand-type="+dist, "--events=1", "--threads=1", script, "run")
		cancel()
		var sb []float64
		for _, l := range strings.Split(out, "\n") {
			if f, ok := strings.CutPrefix(l, "dist "); ok {
				for _, x := range strings.Fields(f) {
					sb = append(sb, atof(t, x))
				}
			}
		}
		if len(sb) != 11 {
			t.Fatalf("%s: sysbench printed %v:\n%s", dist, sb, out)
		}
		g := testGen(t, dist)
		const n = 200000
		ours := make([]float64, 11)
		for i := 0; i < n; i++ {
			v := g.def(1, 10000)
			ours[(v-1)/1000] += 1.0 / n
			if v >= 4951 && v <= 5050 {
				ours[10] += 1.0 / n
			}
		}
		for i := range sb {
			if d := ours[i] - sb[i]; d > 0.01 || d < -0.01 {
				t.Errorf("%s: share %d is %.4f here, %.4f in sysbench\nours     %.4f\nsysbench %.4f", dist, i, ours[i], sb[i], ours, sb)
				break
			}
		}
	}
}
