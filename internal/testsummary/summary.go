// Package testsummary reads a `go test -json` stream (test2json events), echoes what a
// plain `go test` would print (a line per package, the whole output of every failing test)
// as the stream arrives, and ends with a summary of the run: the failing tests' output
// first, then the total wall time, each package's time, the slowest tests, every test over
// a time limit and each skipped test with its reason. `make test` runs the suite through it
// (cmd/testsummary).
package testsummary

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Event is one test2json record (go doc test2json).
type Event struct {
	Time    time.Time
	Action  string // start, run, pause, cont, pass, bench, fail, output, skip, build-output, build-fail
	Package string
	Test    string
	Elapsed float64 // seconds
	Output  string
}

// Test is one test's result: its package, name, outcome ("pass", "fail", "skip", or "" when
// the stream ended before it did), wall time as test2json reports it (for a parallel test,
// from its release to its end) and output lines.
type Test struct {
	Package, Name string
	Outcome       string
	Elapsed       time.Duration
	Paused        bool     // a parallel test waiting for its turn (t.Parallel), not yet continued
	Output        []string // its own output lines
	// All is a top-level test's output with its subtests', in the order go test printed it.
	All []string
}

// Package is one package's result: its outcome and its time as go test reports it (from
// the test binary's start to its end, summed over the runs of the stream; 0 for a package
// with no test files).
type Package struct {
	Name    string
	Outcome string
	Elapsed time.Duration
	Output  []string // output not attributed to a test (panics, TestMain, build errors)
	NoTests bool
	noRun   bool // this run of the package matched no test (-run)
}

// Run is what Read collected.
type Run struct {
	Packages map[string]*Package
	Tests    map[string]*Test // by "package\x00name"
	order    []string         // test keys in the order they started
	First    time.Time        // the first event's time
	Last     time.Time        // the last event's time
	Other    []string         // lines that were not JSON (go build's errors on stderr)
}

// Options say how a run is echoed and summarised.
type Options struct {
	Slowest int           // how many of the slowest top-level tests the summary lists
	Over    time.Duration // every test at or over this is named
}

func key(pkg, test string) string { return pkg + "\x00" + test }

// Read consumes the stream r until EOF, echoing to live (nil: nothing) as a plain go test
// would: on a package's end its ok/FAIL line, after a failing test's end its output.
// A line that is not a test2json event is echoed as it is and kept in Run.Other. Read
// returns only a read error of r.
func Read(r io.Reader, live io.Writer) (*Run, error) {
	run := &Run{Packages: map[string]*Package{}, Tests: map[string]*Test{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var e Event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			run.Other = append(run.Other, line)
			echo(live, line+"\n")
			continue
		}
		run.add(e, live)
	}
	return run, sc.Err()
}

func echo(w io.Writer, s string) {
	if w != nil {
		io.WriteString(w, s)
	}
}

func (run *Run) add(e Event, live io.Writer) {
	if !e.Time.IsZero() {
		if run.First.IsZero() || e.Time.Before(run.First) {
			run.First = e.Time
		}
		if e.Time.After(run.Last) {
			run.Last = e.Time
		}
	}
	p := run.Packages[e.Package]
	if p == nil && e.Package != "" {
		p = &Package{Name: e.Package}
		run.Packages[e.Package] = p
	}
	if e.Test == "" {
		run.addPackage(p, e, live)
		return
	}
	k := key(e.Package, e.Test)
	t := run.Tests[k]
	if t == nil {
		t = &Test{Package: e.Package, Name: e.Test}
		run.Tests[k] = t
		run.order = append(run.order, k)
	}
	switch e.Action {
	case "output":
		t.Output = append(t.Output, e.Output)
		if top := run.Tests[key(e.Package, topName(e.Test))]; top != nil {
			top.All = append(top.All, e.Output)
		}
	case "pause":
		t.Paused = true
	case "cont":
		t.Paused = false
	case "pass", "fail", "skip":
		t.Outcome = e.Action
		t.Elapsed = seconds(e.Elapsed)
		if e.Action == "fail" && !strings.Contains(t.Name, "/") {
			echo(live, strings.Join(t.All, ""))
		}
	}
}

// topName is the top-level test of a (sub)test's name.
func topName(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}

func (run *Run) addPackage(p *Package, e Event, live io.Writer) {
	if p == nil {
		return
	}
	switch e.Action {
	case "start":
		p.noRun = false
	case "output", "build-output":
		p.Output = append(p.Output, e.Output)
		if strings.Contains(e.Output, "[no test files]") {
			p.NoTests = true
		}
		if strings.Contains(e.Output, "[no tests to run]") {
			p.noRun = true
		}
	case "pass", "fail", "skip":
		// A package may end more than once in one stream (make test runs the suite in two
		// go test commands): its times add up, and a failure stays a failure.
		if p.Outcome != "fail" {
			p.Outcome = e.Action
		}
		p.Elapsed += seconds(e.Elapsed)
		if p.NoTests {
			return
		}
		if e.Action == "fail" {
			// What no test owns: a panic, a timeout, TestMain, a build failure.
			echo(live, strings.Join(p.Output, ""))
			return
		}
		if !p.noRun {
			echo(live, fmt.Sprintf("ok  \t%s\t%.1fs\n", p.Name, e.Elapsed))
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Failed returns the tests that failed (subtests included) in the order they started.
func (run *Run) Failed() []*Test { return run.with(func(t *Test) bool { return t.Outcome == "fail" }) }

// Unfinished returns the tests that started and never ended (a timeout or a crash), but
// not the parallel tests still waiting for their turn (Waiting).
func (run *Run) Unfinished() []*Test {
	return run.with(func(t *Test) bool { return t.Outcome == "" && !t.Paused })
}

// Waiting returns the parallel tests that never got their turn (paused, not continued).
func (run *Run) Waiting() []*Test {
	return run.with(func(t *Test) bool { return t.Outcome == "" && t.Paused })
}

// Skipped returns the skipped tests in the order they started.
func (run *Run) Skipped() []*Test { return run.with(func(t *Test) bool { return t.Outcome == "skip" }) }

func (run *Run) with(f func(*Test) bool) []*Test {
	var out []*Test
	for _, k := range run.order {
		if t := run.Tests[k]; f(t) {
			out = append(out, t)
		}
	}
	return out
}

// TopLevel returns the top-level tests (no subtests) that ended, slowest first.
func (run *Run) TopLevel() []*Test {
	out := run.with(func(t *Test) bool { return t.Outcome != "" && !strings.Contains(t.Name, "/") })
	sort.SliceStable(out, func(i, j int) bool { return out[i].Elapsed > out[j].Elapsed })
	return out
}

// OK reports whether every package that ran passed and no test failed or was left running.
func (run *Run) OK() bool {
	for _, p := range run.Packages {
		if p.Outcome == "fail" || p.Outcome == "" {
			return false
		}
	}
	return len(run.Failed()) == 0 && len(run.Unfinished()) == 0 && len(run.Waiting()) == 0
}

// SkipReason is the skip message of a skipped test: its last output line before the
// "--- SKIP" line, without the file:line prefix t.Skip adds ("" when it said nothing).
func SkipReason(t *Test) string {
	var reason string
	for _, l := range t.Output {
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "=== ") || strings.HasPrefix(s, "--- ") {
			continue
		}
		reason = s
	}
	if i := strings.Index(reason, ": "); i > 0 && strings.Contains(reason[:i], ".go:") {
		reason = reason[i+2:]
	}
	return reason
}

// Summarize writes the run's summary to w: the output of each failing or unfinished
// test first, then the wall time (wall: the command's own, 0 for the stream's first to last
// event), each package's time, the o.Slowest slowest top-level tests, every test at or
// over o.Over and each skipped test with its reason.
func Summarize(w io.Writer, run *Run, wall time.Duration, o Options) {
	if wall == 0 {
		wall = run.Last.Sub(run.First)
	}
	failed, unfinished := run.Failed(), run.Unfinished()
	if len(failed)+len(unfinished) > 0 {
		fmt.Fprintf(w, "\n=== FAILED: %d test(s), %d left running\n", len(failed), len(unfinished))
		for _, t := range append(failed, unfinished...) {
			if strings.Contains(t.Name, "/") {
				continue // its top-level test's output holds it
			}
			fmt.Fprintf(w, "--- %s %s\n%s", short(t.Package), t.Name, strings.Join(t.All, ""))
		}
		for _, t := range append(failed, unfinished...) {
			fmt.Fprintf(w, "    %s: %s %s\n", verdict(t), short(t.Package), t.Name)
		}
	}
	top := run.TopLevel()
	var pass, skip, fail int
	for _, t := range top {
		switch t.Outcome {
		case "pass":
			pass++
		case "skip":
			skip++
		case "fail":
			fail++
		}
	}
	waiting := 0
	for _, t := range run.Waiting() {
		if !strings.Contains(t.Name, "/") {
			waiting++
		}
	}
	fmt.Fprintf(w, "\n=== SUMMARY: %s wall, %d top-level tests: %d passed, %d failed, %d skipped, %d left running, %d never ran (waiting for a parallel slot)\n",
		wall.Round(time.Second), len(top)+len(unfinished)+waiting, pass, fail, skip, len(unfinished), waiting)
	writePackages(w, run)
	writeSlowest(w, top, o)
	writeSkipped(w, run.Skipped())
}

func verdict(t *Test) string {
	if t.Outcome == "" {
		return "LEFT RUNNING"
	}
	return "FAIL"
}

func writePackages(w io.Writer, run *Run) {
	var ps []*Package
	for _, p := range run.Packages {
		if !p.NoTests {
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Elapsed > ps[j].Elapsed })
	fmt.Fprintf(w, "\npackages (%d with tests), slowest first:\n", len(ps))
	for _, p := range ps {
		outcome := p.Outcome
		if outcome == "" {
			outcome = "unfinished"
		}
		fmt.Fprintf(w, "  %8s  %-5s %s\n", p.Elapsed.Round(100*time.Millisecond), outcome, short(p.Name))
	}
}

func writeSlowest(w io.Writer, top []*Test, o Options) {
	n := min(o.Slowest, len(top))
	fmt.Fprintf(w, "\nthe %d slowest tests:\n", n)
	for _, t := range top[:n] {
		fmt.Fprintf(w, "  %8s  %-5s %s %s\n", t.Elapsed.Round(100*time.Millisecond), t.Outcome, short(t.Package), t.Name)
	}
	if o.Over <= 0 {
		return
	}
	var over []*Test
	for _, t := range top {
		if t.Elapsed >= o.Over {
			over = append(over, t)
		}
	}
	fmt.Fprintf(w, "\ntests over %s: %d\n", o.Over, len(over))
	for _, t := range over {
		fmt.Fprintf(w, "  %8s  %s %s\n", t.Elapsed.Round(100*time.Millisecond), short(t.Package), t.Name)
	}
}

func writeSkipped(w io.Writer, skipped []*Test) {
	fmt.Fprintf(w, "\nskipped: %d\n", len(skipped))
	for _, t := range skipped {
		reason := SkipReason(t)
		if reason == "" {
			reason = "(no reason given)"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", short(t.Package), t.Name, reason)
	}
}

const module = "github.com/habench/habench"

// short drops the module path from a package name.
func short(pkg string) string {
	if s, ok := strings.CutPrefix(pkg, module+"/"); ok {
		return s
	}
	return pkg
}
