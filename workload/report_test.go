package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The regexes a script parsing sysbench 1.0.20's output would use. They parse
// the reference outputs in testdata and must parse habench's output too.
var (
	reInterval = regexp.MustCompile(`^\[ (\d+)s \] thds: (\d+) tps: (\d+\.\d\d) qps: (\d+\.\d\d) \(r/w/o: (\d+\.\d\d)/(\d+\.\d\d)/(\d+\.\d\d)\) lat \(ms,(\d+)%\): (\d+\.\d\d) err/s: (\d+\.\d\d) reconn/s: (\d+\.\d\d)$`)
	reQueue    = regexp.MustCompile(`^\[ (\d+)s \] queue length: (\d+), concurrency: (\d+)$`)
	reSummary  = map[string]*regexp.Regexp{
		"read":         regexp.MustCompile(`^        read: +(\d+)$`),
		"write":        regexp.MustCompile(`^        write: +(\d+)$`),
		"other":        regexp.MustCompile(`^        other: +(\d+)$`),
		"total":        regexp.MustCompile(`^        total: +(\d+)$`),
		"transactions": regexp.MustCompile(`^    transactions: +(\d+) +\((\d+\.\d\d) per sec\.\)$`),
		"queries":      regexp.MustCompile(`^    queries: +(\d+) +\((\d+\.\d\d) per sec\.\)$`),
		"ignored":      regexp.MustCompile(`^    ignored errors: +(\d+) +\((\d+\.\d\d) per sec\.\)$`),
		"reconnects":   regexp.MustCompile(`^    reconnects: +(\d+) +\((\d+\.\d\d) per sec\.\)$`),
		"total time":   regexp.MustCompile(`^    total time: +(\d+\.\d{4})s$`),
		"events":       regexp.MustCompile(`^    total number of events: +(\d+)$`),
		"min":          regexp.MustCompile(`^ +min: +(\d+\.\d\d)$`),
		"avg":          regexp.MustCompile(`^ +avg: +(\d+\.\d\d)$`),
		"max":          regexp.MustCompile(`^ +max: +(\d+\.\d\d)$`),
		"pct":          regexp.MustCompile(`^ +(\d+)th percentile: +(\d+\.\d\d)$`),
		"sum":          regexp.MustCompile(`^ +sum: +(\d+\.\d\d)$`),
		"fair events":  regexp.MustCompile(`^    events \(avg/stddev\): +(\d+\.\d{4})/(\d+\.\d\d)$`),
		"fair time":    regexp.MustCompile(`^    execution time \(avg/stddev\): +(\d+\.\d{4})/(\d+\.\d\d)$`),
	}
)

type parsedOutput struct {
	header    []string
	intervals [][]string // submatches of reInterval
	queues    [][]string
	summary   map[string][]string
	block     []string // lines from "SQL statistics:" to the end
}

func parseOutput(t *testing.T, text string) parsedOutput {
	t.Helper()
	p := parsedOutput{summary: map[string][]string{}}
	lines := strings.Split(text, "\n")
	inSummary := false
	for i, l := range lines {
		if l == "SQL statistics:" {
			inSummary = true
			p.block = lines[i:]
		}
		switch {
		case inSummary:
			for k, re := range reSummary {
				if m := re.FindStringSubmatch(l); m != nil {
					if _, dup := p.summary[k]; dup {
						t.Errorf("summary key %q matched twice", k)
					}
					p.summary[k] = m[1:]
				}
			}
		case reInterval.MatchString(l):
			p.intervals = append(p.intervals, reInterval.FindStringSubmatch(l)[1:])
		case reQueue.MatchString(l):
			p.queues = append(p.queues, reQueue.FindStringSubmatch(l)[1:])
		case len(p.intervals) == 0:
			p.header = append(p.header, l)
		}
	}
	return p
}

// casesDir holds sysbench 1.0.20's real outputs (see testdata/README.md).
const casesDir = "testdata"

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// valueColumn returns where the first number of a line starts (-1 if none).
var firstNum = regexp.MustCompile(`\d`)

func valueColumn(l string) int {
	if loc := firstNum.FindStringIndex(l); loc != nil {
		return loc[0]
	}
	return -1
}

var perSecRE = regexp.MustCompile(`\(\d+\.\d\d per sec\.\)`)

// TestReferenceLayout rebuilds every line of sysbench 1.0.20's real outputs
// from the values parsed out of them and requires the same bytes (except the
// "per sec." rates, which sysbench divides by a slightly different timer than
// the printed total time).
func TestReferenceLayout(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(casesDir, "sysbench-1.0.20-*.txt"))
	if len(files) != 2 {
		t.Fatalf("%d sysbench-1.0.20-*.txt in %s, want the 2 reference outputs: %v", len(files), casesDir, files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ref := parseOutput(t, string(raw))
			if len(ref.intervals) == 0 || len(ref.summary) != len(reSummary) {
				t.Fatalf("reference parse: %d intervals, summary keys %d of %d", len(ref.intervals), len(ref.summary), len(reSummary))
			}
			o := DefaultOptions()
			o.Threads = int(atoi(t, ref.intervals[0][1]))
			o.ReportInterval = time.Second
			o.Percentile = atof(t, ref.intervals[0][7])
			rate := regexp.MustCompile(`(?m)^Target transaction rate: (\d+)/sec$`).FindStringSubmatch(string(raw))
			if rate != nil {
				o.Rate = int(atoi(t, rate[1]))
				if len(ref.queues) != len(ref.intervals) {
					t.Fatalf("rate output: %d queue lines for %d intervals", len(ref.queues), len(ref.intervals))
				}
			}

			// Header: everything but the program line.
			var hb bytes.Buffer
			PrintHeader(&hb, o, "v0.0.0-test")
			ours := strings.Split(strings.TrimSuffix(hb.String(), "\n"), "\n")
			refHdr := ref.header
			if ours[0] != "habench v0.0.0-test (sysbench 1.0.20 compatible)" {
				t.Errorf("header line %q", ours[0])
			}
			if strings.Join(ours[1:], "\n") != strings.Join(refHdr[1:], "\n") {
				t.Errorf("header differs:\nours:\n%s\nsysbench:\n%s", strings.Join(ours[1:], "\n"), strings.Join(refHdr[1:], "\n"))
			}

			// Interval lines, byte for byte.
			var ib bytes.Buffer
			var want []string
			for i, m := range ref.intervals {
				iv := Interval{
					Elapsed: time.Duration(atoi(t, m[0])) * time.Second, Threads: int(atoi(t, m[1])),
					TPS: atof(t, m[2]), QPS: atof(t, m[3]), ReadsPerSec: atof(t, m[4]), WritesPerSec: atof(t, m[5]),
					OthersPerSec: atof(t, m[6]), LatencyPct: atof(t, m[8]), ErrPerSec: atof(t, m[9]), ReconnPerSec: atof(t, m[10]),
				}
				want = append(want, "["+strings.SplitN(reLine(string(raw), m), "[", 2)[1])
				if o.Rate > 0 {
					q := ref.queues[i]
					iv.QueueLength, iv.Concurrency = int(atoi(t, q[1])), int(atoi(t, q[2]))
					want = append(want, "[ "+q[0]+"s ] queue length: "+q[1]+", concurrency: "+q[2])
				}
				PrintInterval(&ib, iv, o)
			}
			if got := strings.TrimSuffix(ib.String(), "\n"); got != strings.Join(want, "\n") {
				t.Errorf("interval lines differ:\nours:\n%s\nsysbench:\n%s", got, strings.Join(want, "\n"))
			}

			// Summary block.
			s := ref.summary
			res := resultFromSummary(t, s)
			var sb bytes.Buffer
			PrintSummary(&sb, res, o)
			assertSameLayout(t, strings.Split(sb.String(), "\n"), ref.block)
			// Our own summary parses back with the same regexes, to the same values.
			back := parseOutput(t, sb.String())
			for k, v := range s {
				if k == "transactions" || k == "queries" || k == "ignored" || k == "reconnects" {
					if back.summary[k][0] != v[0] {
						t.Errorf("%s: parsed back %v, want %v", k, back.summary[k], v)
					}
					continue
				}
				if strings.Join(back.summary[k], "/") != strings.Join(v, "/") {
					t.Errorf("%s: parsed back %v, want %v", k, back.summary[k], v)
				}
			}
		})
	}
}

// resultFromSummary rebuilds a Result from parsed summary values.
func resultFromSummary(t *testing.T, s map[string][]string) *Result {
	t.Helper()
	return &Result{
		Reads: atoi(t, s["read"][0]), Writes: atoi(t, s["write"][0]), Others: atoi(t, s["other"][0]),
		Queries: atoi(t, s["total"][0]), Transactions: atoi(t, s["transactions"][0]),
		IgnoredErrors: atoi(t, s["ignored"][0]), Reconnects: atoi(t, s["reconnects"][0]),
		TotalTime:  time.Duration(atof(t, s["total time"][0]) * float64(time.Second)),
		LatencyMin: atof(t, s["min"][0]), LatencyAvg: atof(t, s["avg"][0]), LatencyMax: atof(t, s["max"][0]),
		LatencyPct: atof(t, s["pct"][1]), LatencySum: atof(t, s["sum"][0]),
		EventsAvg: atof(t, s["fair events"][0]), EventsStddev: atof(t, s["fair events"][1]),
		ExecTimeAvg: atof(t, s["fair time"][0]), ExecTimeStddev: atof(t, s["fair time"][1]),
	}
}

// assertSameLayout compares our summary lines with sysbench's: same bytes
// except the "per sec." rates, and values starting in the same column.
func assertSameLayout(t *testing.T, got, ref []string) {
	t.Helper()
	if len(got) != len(ref) {
		t.Fatalf("summary has %d lines, sysbench %d:\n%s\n--- sysbench:\n%s", len(got), len(ref), strings.Join(got, "\n"), strings.Join(ref, "\n"))
	}
	for i := range got {
		g, w := got[i], ref[i]
		if valueColumn(g) != valueColumn(w) {
			t.Errorf("summary line %d: value starts at column %d, sysbench %d:\n%q\n%q", i, valueColumn(g), valueColumn(w), g, w)
		}
		if perSecRE.ReplaceAllString(g, "(R per sec.)") != perSecRE.ReplaceAllString(w, "(R per sec.)") {
			t.Errorf("summary line %d differs:\nours     %q\nsysbench %q", i, g, w)
		}
	}
}

// reLine finds the raw reference line an interval match came from.
func reLine(raw string, m []string) string {
	for _, l := range strings.Split(raw, "\n") {
		if sm := reInterval.FindStringSubmatch(l); sm != nil && strings.Join(sm[1:], "|") == strings.Join(m, "|") {
			return l
		}
	}
	return ""
}

// TestOutputParsesAtOtherMagnitudes checks that large and zero values, other
// percentiles and a disabled percentile keep sysbench's columns.
func TestOutputParsesAtOtherMagnitudes(t *testing.T) {
	o := DefaultOptions()
	o.Threads, o.Percentile = 256, 99
	iv := Interval{Elapsed: 1234567 * time.Millisecond, Threads: 256, TPS: 123456.789, QPS: 2469135.78,
		ReadsPerSec: 1728395.05, WritesPerSec: 493827.16, OthersPerSec: 246913.58, LatencyPct: 1234.5, ErrPerSec: 0.5, ReconnPerSec: 12}
	var b bytes.Buffer
	PrintInterval(&b, iv, o)
	line := strings.TrimSuffix(b.String(), "\n")
	m := reInterval.FindStringSubmatch(line)
	if m == nil || m[1] != "1235" || m[3] != "123456.79" || m[8] != "99" || m[9] != "1234.50" || m[11] != "12.00" {
		t.Errorf("interval line %q parsed as %v", line, m)
	}
	res := &Result{Reads: 1234567890, Writes: 4, Others: 0, Queries: 1234567894, Transactions: 12345678,
		TotalTime: 3600 * time.Second, LatencyMin: 0.01, LatencyAvg: 5, LatencyMax: 123456.789, LatencyPct: 99999.99, LatencySum: 1e9,
		EventsAvg: 48225.3, EventsStddev: 1234.5, ExecTimeAvg: 3599.9, ExecTimeStddev: 0.01}
	b.Reset()
	PrintSummary(&b, res, o)
	p := parseOutput(t, b.String())
	if len(p.summary) != len(reSummary) {
		t.Fatalf("parsed %d of %d summary keys:\n%s", len(p.summary), len(reSummary), b.String())
	}
	if p.summary["pct"][0] != "99" || p.summary["read"][0] != "1234567890" || p.summary["transactions"][0] != "12345678" ||
		p.summary["transactions"][1] != "3429.36" || p.summary["max"][0] != "123456.79" || p.summary["total time"][0] != "3600.0000" {
		t.Errorf("parsed %v", p.summary)
	}
	for _, l := range p.block {
		if strings.HasPrefix(l, "    transactions:") && valueColumn(l) != 41 {
			t.Errorf("value column of %q is %d, want 41", l, valueColumn(l))
		}
		if strings.Contains(l, "percentile") && len(l) != len("         95th percentile:                        5.18") {
			t.Errorf("percentile line %q has width %d", l, len(l))
		}
	}
	// Fractional percentiles keep the value's end column.
	o.Percentile = 99.9
	b.Reset()
	PrintSummary(&b, res, o)
	if !strings.Contains(b.String(), "        99.9th percentile:                   99999.99\n") {
		t.Errorf("99.9th percentile line:\n%s", b.String())
	}
	o.Percentile = 0
	b.Reset()
	PrintSummary(&b, res, o)
	if !strings.Contains(b.String(), "\n         percentile stats:               disabled\n") {
		t.Errorf("disabled percentile:\n%s", b.String())
	}
}

func TestHeaderVariants(t *testing.T) {
	o := DefaultOptions()
	o.Threads, o.RandSeed, o.Warmup = 2, 7, 5*time.Second
	var b bytes.Buffer
	PrintHeader(&b, o, "1.2.3")
	want := "habench 1.2.3 (sysbench 1.0.20 compatible)\n\nRunning the test with following options:\nNumber of threads: 2\n" +
		"Initializing random number generator from seed (7).\n\n\nInitializing worker threads...\n\n" +
		"Warming up for 5 seconds...\n\nThreads started!\n\n"
	if b.String() != want {
		t.Errorf("header\n%q\nwant\n%q", b.String(), want)
	}
}
