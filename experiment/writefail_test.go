package experiment

import (
	"github.com/habench/habench/schema"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
)

// blockFile puts a non-empty directory where dir/name should be written, so that writing
// the file (through a temporary file and a rename) fails, also for root.
func blockFile(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, name, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestSweepWritesFailNamingTheFile: a sweep.json that cannot be written fails the save
// naming the file, is kept so the sweep stops, and a cell whose start cannot be recorded
// is not run but marked failed with that error; sweep.md and the other sweep reports that
// cannot be written fail finish naming them.
func TestSweepWritesFailNamingTheFile(t *testing.T) {
	p, err := mustParse(t, gridScenario(t)).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sw := &sweepRun{r: &ScenarioRun{}, plan: p, file: newSweepFile(p, []byte(gridScenario(t))), dir: dir}
	sw.inv, sw.out = &schema.Invocation{}, io.Discard
	if err := sw.save(); err != nil {
		t.Fatalf("first save: %v", err)
	}
	blockFile(t, dir, "sweep.json")
	err = sw.save()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "sweep.json")) {
		t.Fatalf("save over a directory: %v, want an error naming %s", err, filepath.Join(dir, "sweep.json"))
	}
	if sw.saveErr == nil {
		t.Fatal("the failed save is not kept: the sweep would go on without its record")
	}

	sw.saveErr = nil
	c := &cluster.Cluster{Spec: p.Cells[0].Deployment.Spec, Binaries: &cluster.Binaries{}}
	cell := p.Cells[0]
	sw.cell(t.Context(), &cellState{c: c}, cell)
	rec := sw.rec(cell)
	if rec.Status != schema.StatusFailed || !strings.Contains(rec.Error, "sweep.json") || rec.Dir != "" {
		t.Errorf("cell whose start could not be recorded: status %q error %q dir %q, want failed naming sweep.json and not run", rec.Status, rec.Error, rec.Dir)
	}
	if sw.saveErr == nil {
		t.Error("the cell's failed save is not kept")
	}

	blockFile(t, dir, "sweep.md")
	_, err = sw.finish()
	if err == nil || !strings.Contains(err.Error(), "sweep.md") {
		t.Errorf("finish with sweep.md a directory: %v, want an error naming sweep.md", err)
	}
}

// TestRunWritesFailNamingTheFile: a run whose report.html cannot be written fails naming
// it, after manifest.json, summary.json and report.md were written; a run whose
// summary.json cannot be written fails naming that.
func TestRunWritesFailNamingTheFile(t *testing.T) {
	for _, name := range []string{"report.html", "summary.json"} {
		dir := filepath.Join(t.TempDir(), "run")
		res, err := NewResults(dir)
		if err != nil {
			t.Fatal(err)
		}
		blockFile(t, dir, name)
		st := &runState{b: &Bench{}, ctx: t.Context(), res: res, man: &schema.Manifest{Workload: schema.ManifestWorkload{Name: "oltp_read_write"}},
			sum: &schema.Summary{Workload: "oltp_read_write", LatencyMs: map[string]float64{"avg": 1}}}
		err = st.write()
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s a directory: write returned %v, want an error naming it", name, err)
		}
		for _, f := range []string{"manifest.json", "report.md"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s a directory: %s not written: %v", name, f, err)
			}
		}
	}
}
