package experiment

import (
	"bytes"
	"context"
	"errors"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// gridScenarioFile is the grid scenario: 2 topologies, a sweep of 128 cells (the
// scenario package's testdata, shared with its tests).
const gridScenarioFile = "../scenario/testdata/grid.yaml"

// gridScenario is gridScenarioFile's text.
func gridScenario(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(gridScenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustParse(t *testing.T, y string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSweepSettingsAxes(t *testing.T) {
	base := "name: x\ntopologies:\n  - {name: a, kind: single, flavor: mariadb}\nworkload: {test: oltp_read_write}\nsweep:\n"
	p, err := mustParse(t, base+`  knob.durability:
    - {sync_binlog: 1, innodb_flush_log_at_trx_commit: 1}
    - {sync_binlog: 0, innodb_flush_log_at_trx_commit: 2}
  knob.fc:
    - {a_threshold: 25000, b_threshold: 25000}
    - {a_threshold: 250000, b_threshold: 250000}
`).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	d, fc := p.AxisNamed("knob.durability"), p.AxisNamed("knob.fc")
	if !slices.Equal(d.Labels(), []string{"1/1", "0/2"}) || !d.Slash || !slices.Equal(d.Variables(), []string{"sync_binlog", "innodb_flush_log_at_trx_commit"}) {
		t.Errorf("durability axis %v slash %v vars %v", d.Labels(), d.Slash, d.Variables())
	}
	if !slices.Equal(fc.Labels(), []string{"25000", "250000"}) || fc.Slash {
		t.Errorf("fc axis %v", fc.Labels())
	}
	if len(p.Cells) != 4 || len(p.Cells[3].Knobs) != 2 || len(p.Cells[3].Knobs[0].Settings) != 2 {
		t.Errorf("cells %d, last knobs %+v", len(p.Cells), p.Cells[3].Knobs)
	}
	// Knob names as package knob reads them; provider options with dots.
	p2, err := mustParse(t, base+"  knob.Innodb-Flush-Log-At-Trx-Commit: [1]\n  knob.gcs.fc_limit: [16, 64]\n").Plan("")
	if err != nil {
		t.Fatal(err)
	}
	if k := p2.Cells[1].Knobs; len(k) != 2 || k[0].Settings[0].Name != "innodb_flush_log_at_trx_commit" || k[1].Settings[0] != (scenario.Setting{Name: "gcs.fc_limit", Value: "64"}) {
		t.Errorf("knob names %+v", k)
	}
	// Read back labelled like the axis.
	rb := map[string]map[string]string{"sync_binlog": {"n1": "0", "n2": "0"}, "innodb_flush_log_at_trx_commit": {"n1": "2", "n2": "2"},
		"a_threshold": {"n1": "250000"}, "b_threshold": {"n1": "250000"}}
	if v, w := readBackValue(d, p.Cells[3].Knobs[0].Settings, rb); v != "0/2" || len(w) != 0 {
		t.Errorf("durability read back %q %v", v, w)
	}
	if v, w := readBackValue(fc, p.Cells[3].Knobs[1].Settings, rb); v != "250000" || len(w) != 0 {
		t.Errorf("fc read back %q %v", v, w)
	}
	rb["sync_binlog"]["n2"] = "1"
	if v, w := readBackValue(d, p.Cells[3].Knobs[0].Settings, rb); v != "n1=0;n2=1/2" || len(w) != 1 || !strings.Contains(w[0], "differ") {
		t.Errorf("mixed read back %q %v", v, w)
	}
	one := &scenario.Axis{Name: "knob.sync_binlog", Kind: scenario.AxisKnob}
	if v, w := readBackValue(one, []scenario.Setting{{Name: "sync_binlog", Value: "ON"}}, map[string]map[string]string{"sync_binlog": {"n1": "1"}}); v != "1" || len(w) != 0 {
		t.Errorf("ON read back as 1: %q %v", v, w)
	}
	if v, w := readBackValue(one, []scenario.Setting{{Name: "max_connections", Value: "100"}}, map[string]map[string]string{"max_connections": {"n1": "151"}}); v != "151" || len(w) != 1 {
		t.Errorf("different value: %q %v", v, w)
	}
}

func TestSameValue(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{{"8M", "8388608", true}, {"ON", "1", true}, {"off", "0", true}, {"1", "1.0", true}, {"AFTER_SYNC", "after_sync", true},
		{"1", "2", false}, {"128M", "134217729", false}, {"ON", "0", false}} {
		if SameValue(c.a, c.b) != c.same {
			t.Errorf("SameValue(%q, %q) = %v", c.a, c.b, !c.same)
		}
	}
}

// TestResumeBookkeeping: a resumed directory is checked (same file, same scale, same grid)
// before anything is deployed; a directory whose cells are all done or skipped runs
// nothing and records the invocation.
func TestResumeBookkeeping(t *testing.T) {
	raw := []byte(gridScenario(t))
	s := mustParse(t, gridScenario(t))
	p, _ := s.Plan("small")
	dir := t.TempDir()
	f := newSweepFile(p, raw)
	for i := range f.Cells {
		if f.Cells[i].Status == schema.StatusPending {
			f.Cells[i].Status = schema.StatusDone
		}
	}
	if err := writeJSONAtomic(filepath.Join(dir, "sweep.json"), f); err != nil {
		t.Fatal(err)
	}
	sb := &cluster.Store{StateDir: t.TempDir()}
	run := func(s *scenario.Scenario, scale string) error {
		r := &ScenarioRun{Scenario: s, Store: sb, ResumeDir: dir, Scale: scale}
		_, _, err := r.Run(context.Background())
		return err
	}
	var fe *topology.FieldError
	other := mustParse(t, strings.Replace(gridScenario(t), "time: 5", "time: 6", 1))
	if err := run(other, ""); !errors.As(err, &fe) || !strings.Contains(err.Error(), "another scenario file") || !strings.Contains(err.Error(), filepath.Join(dir, "scenario.yaml")) {
		t.Errorf("other file: %v", err)
	}
	if err := run(s, "medium"); !errors.As(err, &fe) || !strings.Contains(err.Error(), "run at scale small") {
		t.Errorf("other scale: %v", err)
	}
	if err := run(s, ""); err != nil {
		t.Fatalf("nothing to do: %v", err)
	}
	g, err := schema.ReadSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Invocations) != 1 || !g.Invocations[0].Resume || len(g.Invocations[0].CellsRun) != 0 || g.Invocations[0].Finished == nil {
		t.Errorf("invocations %+v", g.Invocations)
	}
	// A grid that no longer matches (cells changed) is refused.
	g.Cells[3].Axes = map[string]string{"topology": "zz"}
	writeJSONAtomic(filepath.Join(dir, "sweep.json"), g)
	if err := run(s, ""); !errors.As(err, &fe) || !strings.Contains(err.Error(), "cell 4 is") {
		t.Errorf("changed grid: %v", err)
	}
	// Not a sweep directory.
	if err := (&ScenarioRun{Scenario: s, Store: sb, ResumeDir: t.TempDir()}).runErr(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "not a sweep directory") {
		t.Errorf("empty dir: %v", err)
	}
}

func (r *ScenarioRun) runErr() error {
	_, _, err := r.Run(context.Background())
	return err
}

// TestNewSweepFileRecords: the fresh record has every cell pending or skipped, with the
// requested variables and the axes with their variables.
func TestNewSweepFileRecords(t *testing.T) {
	s := mustParse(t, gridScenario(t))
	p, _ := s.Plan("")
	f := newSweepFile(p, []byte(gridScenario(t)))
	if f.ScenarioSHA256 != ScenarioSHA256([]byte(gridScenario(t))) || f.Scale != "full" || f.Baseline != "a" || len(f.Cells) != 128 || len(f.Axes) != 7 {
		t.Fatalf("file %+v", f)
	}
	if f.Axes[1].Name != "option.innodb_buffer_pool_size" || !slices.Equal(f.Axes[1].Variables, []string{"innodb_buffer_pool_size"}) {
		t.Errorf("axis %+v", f.Axes[1])
	}
	c := f.Cells[127]
	if c.Status != schema.StatusPending || c.Requested["sync_binlog"] != "1" || c.Requested["innodb_buffer_pool_size"] != "128M" || c.Links != "0.6ms" || c.Threads != 4 || c.Repeat != 2 || c.Kind != "async" {
		t.Errorf("cell 128 %+v", c)
	}
	for i, c := range f.Cells {
		reuse := p.Cells[i].Reuse
		if (reuse == nil && c.Status != schema.StatusPending) || (reuse != nil && (c.Status != schema.StatusReused || c.ReusedFrom != reuse.Index || c.Links != "none")) {
			t.Errorf("cell %d %+v", i+1, c)
		}
	}
	if f.Axes[3].Name != "links" || !slices.Equal(f.Axes[3].Inert, []string{"a"}) || f.Axes[3].Reference != "none" {
		t.Errorf("links axis %+v: want inert for the single node a, reference none", f.Axes[3])
	}
}

// TestProgressLine: without a TTY one line per cell and nothing else; on a TTY the line
// is rewritten in place and cleared around the run's own output.
func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &Progress{W: &buf}
	p.Status("cell 1/2 topology=a: deploying", nil)
	p.Cell("cell 1/2 topology=a threads=1", func() time.Duration { return 70 * time.Second })
	p.Cell("cell 2/2 topology=a threads=4", func() time.Duration { return 4 * time.Second })
	p.Close()
	if got := buf.String(); got != "cell 1/2 topology=a threads=1  ETA 1m10s\ncell 2/2 topology=a threads=4  ETA 4s\n" {
		t.Errorf("non-TTY progress %q", got)
	}
	if p.Wrap(&buf) != &buf {
		t.Error("non-TTY Wrap must not wrap")
	}
	var term, out bytes.Buffer
	tp := &Progress{W: &term, TTY: true}
	w := tp.Wrap(&out)
	tp.Cell("cell 1/1 x", func() time.Duration { return time.Second })
	w.Write([]byte("[ 1s ] tps: 5\n"))
	tp.Close()
	if got := term.String(); got != "\r\033[Kcell 1/1 x  ETA 1s\r\033[K\r\033[Kcell 1/1 x  ETA 1s\r\033[K" {
		t.Errorf("TTY progress %q", got)
	}
	if out.String() != "[ 1s ] tps: 5\n" {
		t.Errorf("run output %q", out.String())
	}
	var nilp *Progress
	nilp.Cell("x", nil)
	nilp.Close()
	if NewProgress(os.Stderr, true) != nil {
		t.Error("--quiet must give no progress")
	}
}

// TestCellExtraBaseline: without baseline: the first single primary is the baseline of
// comparison.md and sweep.json (the default is the single primary), else the first
// topology; every cell's manifest records it and why, so the report picks the same run
// and says why.
func TestCellExtraBaseline(t *testing.T) {
	y := "name: b\ntopologies:\n  - {name: ba, kind: async, nodes: 2, flavor: mariadb}\n  - {name: bs, kind: single, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	noSingle := "name: b\ntopologies:\n  - {name: ba, kind: async, nodes: 2, flavor: mariadb}\n  - {name: bb, kind: semisync, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	for _, c := range []struct{ yaml, want, why string }{
		{y, "bs", "the single primary, by default"},
		{y + "baseline: ba\n", "ba", "the scenario's baseline"},
		{noSingle, "ba", "the first topology, as none is a single primary"},
	} {
		p, err := mustParse(t, c.yaml).Plan("")
		if err != nil {
			t.Fatal(err)
		}
		res := &report.Results{}
		for i := range p.Cells {
			e := cellExtra(p, p.Cells[i])
			if e["baseline"] != c.want || e["baseline_why"] != c.why || e["topology"] != p.Cells[i].Topology {
				t.Errorf("cell %d extra %v, want baseline %s (%s)", p.Cells[i].Index, e, c.want, c.why)
			}
			res.Runs = append(res.Runs, &report.Run{Name: p.Cells[i].Topology, Topology: p.Cells[i].Topology, Manifest: schema.Manifest{Extra: e}})
		}
		if b, why, err := res.Baseline(""); err != nil || b == nil || b.Name != c.want || why != c.why || p.Baseline() != c.want {
			t.Errorf("report baseline %v (%s, %v), plan baseline %s, want %s", b, why, err, p.Baseline(), c.want)
		}
	}
}
