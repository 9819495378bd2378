package report

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/schema"
)

var updateGolden = flag.Bool("update", false, "rewrite report/testdata/runmd's golden report.md files")

// TestRunMarkdownGolden: report.md of testdata runs (single, async and semisync runs, one
// with knobs) rendered by RunMarkdown from their manifest.json and summary.json, and with
// results' filled summary (every section: faults, node states, hosts, probe, the semisync,
// group and galera samplers' sections) equals the golden files, which were rendered by
// experiment.Report before it moved here (byte-compared). go test ./report -run
// TestRunMarkdownGolden -update rewrites them after an intended change.
func TestRunMarkdownGolden(t *testing.T) {
	full, err := os.ReadFile("../schema/testdata/summary_full.json")
	if err != nil {
		t.Fatal(err)
	}
	runs := []string{"quick/20261129-220324-qsingle", "quick/20261129-220347-qasync", "quick/20261129-220411-qsemi", "sweep10/20261201-155751-c001-rpsingle"}
	for _, run := range runs {
		dir := filepath.Join("testdata", run)
		r, err := LoadRunSummary(dir)
		if err != nil {
			t.Fatal(err)
		}
		mb, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		rf, err := RunFromJSON(dir, mb, full)
		if err != nil {
			t.Fatal(err)
		}
		for name, md := range map[string]string{filepath.Base(run) + ".md": RunMarkdown(r, true), filepath.Base(run) + "-full.md": RunMarkdown(rf, true)} {
			golden := filepath.Join("testdata", "runmd", name)
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(md), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if md != string(want) {
				t.Errorf("%s: report.md differs from %s:\n%s", run, golden, md)
			}
		}
	}
}

// TestProbeViaLine: the Probe writer section's line on a probe through the proxy names the
// nodes that acknowledged its commits and its stale commits; with none acknowledged it
// says so (not "acknowledged by ;"); nothing for a probe on the writer.
func TestProbeViaLine(t *testing.T) {
	zero, two := int64(0), int64(2)
	for _, c := range []struct {
		p    schema.ProbeSummary
		want string
	}{
		{schema.ProbeSummary{Via: "proxy", Writers: []string{"n1", "n2"}, Acknowledged: 9, StaleCommits: &zero}, "commits acknowledged by n1 then n2; 0 stale commits ("},
		{schema.ProbeSummary{Via: "proxy", Writers: []string{"n1"}, Acknowledged: 9, StaleCommits: &two}, "commits acknowledged by n1; ⚠ **2 stale commits**"},
		{schema.ProbeSummary{Via: "proxy", StaleCommits: &zero}, "as the workload: no commit acknowledged; 0 stale commits ("},
		{schema.ProbeSummary{Via: "proxy", Writers: []string{"n1"}, Acknowledged: 3}, "commits acknowledged by n1; stale commits not counted."},
	} {
		if got := probeViaLine(&c.p); !strings.Contains(got, c.want) || strings.Contains(got, "by ;") {
			t.Errorf("probe %+v: %q, want %q", c.p, got, c.want)
		}
	}
	if got := probeViaLine(&schema.ProbeSummary{}); got != "" {
		t.Errorf("direct: %q, want none", got)
	}
}
