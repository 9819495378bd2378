package testsummary

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stream is a go test -json stream of two packages: one with a pass, a skip with a reason,
// a failing test with a subtest and a slow test; one with no test files.
const stream = `{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"github.com/habench/habench/a"}
{"Time":"2026-12-06T10:00:00Z","Action":"run","Package":"github.com/habench/habench/a","Test":"TestOK"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"github.com/habench/habench/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"pass","Package":"github.com/habench/habench/a","Test":"TestOK","Elapsed":1.5}
{"Time":"2026-12-06T10:00:01Z","Action":"run","Package":"github.com/habench/habench/a","Test":"TestSkip"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"github.com/habench/habench/a","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"github.com/habench/habench/a","Test":"TestSkip","Output":"    a_test.go:12: no sch_netem here\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"github.com/habench/habench/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"skip","Package":"github.com/habench/habench/a","Test":"TestSkip","Elapsed":0}
{"Time":"2026-12-06T10:00:01Z","Action":"run","Package":"github.com/habench/habench/a","Test":"TestBad"}
{"Time":"2026-12-06T10:00:01Z","Action":"run","Package":"github.com/habench/habench/a","Test":"TestBad/sub"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"github.com/habench/habench/a","Test":"TestBad/sub","Output":"    a_test.go:30: want 3, got 4\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"fail","Package":"github.com/habench/habench/a","Test":"TestBad/sub","Elapsed":1}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"github.com/habench/habench/a","Test":"TestBad","Output":"--- FAIL: TestBad (1.00s)\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"fail","Package":"github.com/habench/habench/a","Test":"TestBad","Elapsed":1}
{"Time":"2026-12-06T10:00:02Z","Action":"run","Package":"github.com/habench/habench/a","Test":"TestSlow"}
{"Time":"2026-12-06T10:01:12Z","Action":"pass","Package":"github.com/habench/habench/a","Test":"TestSlow","Elapsed":70}
{"Time":"2026-12-06T10:01:12Z","Action":"output","Package":"github.com/habench/habench/a","Output":"FAIL\n"}
{"Time":"2026-12-06T10:01:12Z","Action":"fail","Package":"github.com/habench/habench/a","Elapsed":72.5}
not json: a build error
{"Time":"2026-12-06T10:01:12Z","Action":"output","Package":"github.com/habench/habench/b","Output":"?   \tgithub.com/habench/habench/b\t[no test files]\n"}
{"Time":"2026-12-06T10:01:12Z","Action":"skip","Package":"github.com/habench/habench/b","Elapsed":0}
`

func TestReadAndSummarize(t *testing.T) {
	var live bytes.Buffer
	run, err := Read(strings.NewReader(stream), &live)
	if err != nil {
		t.Fatal(err)
	}
	if run.OK() {
		t.Error("a run with a failing test is OK")
	}
	if got := len(run.Failed()); got != 2 {
		t.Errorf("failed: %d tests, want 2 (TestBad and TestBad/sub)", got)
	}
	if r := SkipReason(run.Skipped()[0]); r != "no sch_netem here" {
		t.Errorf("skip reason %q", r)
	}
	top := run.TopLevel()
	if len(top) != 4 || top[0].Name != "TestSlow" || top[1].Name != "TestOK" {
		t.Errorf("top-level tests slowest first: %v", names(top))
	}
	if l := live.String(); !strings.Contains(l, "want 3, got 4") || !strings.Contains(l, "not json: a build error") || strings.Contains(l, "[no test files]") {
		t.Errorf("live output:\n%s", l)
	}
	var out bytes.Buffer
	Summarize(&out, run, 0, Options{Slowest: 2, Over: time.Minute})
	s := out.String()
	for _, want := range []string{
		"=== FAILED: 2 test(s), 0 left running",
		"--- a TestBad\n    a_test.go:30: want 3, got 4\n--- FAIL: TestBad",
		"1m12s wall, 4 top-level tests: 2 passed, 1 failed, 1 skipped, 0 left running, 0 never ran",
		"1m12.5s  fail  a\n",
		"the 2 slowest tests:\n     1m10s  pass  a TestSlow\n      1.5s  pass  a TestOK\n",
		"tests over 1m0s: 1\n     1m10s  a TestSlow\n",
		"skipped: 1\n  a TestSkip: no sch_netem here\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "want 3, got 4") > strings.Index(s, "=== SUMMARY") {
		t.Errorf("the failing test's output is not first:\n%s", s)
	}
	if strings.Contains(s, "habench/b") || strings.Contains(s, "github.com/") {
		t.Errorf("a package without tests or a full module path in the summary:\n%s", s)
	}
}

// TestUnfinished: a test the stream never ends (a timeout's panic) fails the run.
func TestUnfinished(t *testing.T) {
	lines := strings.Split(stream, "\n")
	run, err := Read(strings.NewReader(strings.Join(lines[:4], "\n")+"\n"+`{"Action":"run","Package":"p","Test":"TestHang"}`+"\n"+
		`{"Action":"run","Package":"p","Test":"TestWait"}`+"\n"+`{"Action":"pause","Package":"p","Test":"TestWait"}`+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.OK() || len(run.Unfinished()) != 1 || len(run.Waiting()) != 1 || run.Waiting()[0].Name != "TestWait" {
		t.Errorf("OK %v, unfinished %v, waiting %v", run.OK(), names(run.Unfinished()), names(run.Waiting()))
	}
	var out bytes.Buffer
	Summarize(&out, run, 0, Options{})
	if !strings.Contains(out.String(), "1 left running, 1 never ran") {
		t.Errorf("summary:\n%s", out.String())
	}
}

// TestCommandExit runs the command on a real go test stream of a failing test: its exit
// status is go test's, and the failure is in the summary.
func TestCommandExit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs go test")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "testsummary")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/testsummary").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// A failing package, tested with go test -json through the command.
	mod := filepath.Join(dir, "m")
	write(t, filepath.Join(mod, "go.mod"), "module m\n\ngo 1.22\n")
	write(t, filepath.Join(mod, "m_test.go"), "package m\nimport \"testing\"\nfunc TestNo(t *testing.T) { t.Fatal(\"broken on purpose\") }\nfunc TestYes(t *testing.T) {}\n")
	cmd := exec.Command(bin, "-json", filepath.Join(dir, "s.json"), "--", "go", "test", "-json", "-count=1", ".")
	cmd.Dir = mod
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1:\n%s", err, out)
	}
	for _, want := range []string{"broken on purpose", "FAIL: m TestNo", "1 passed, 1 failed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func names(ts []*Test) []string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Name)
	}
	return s
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
