package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/report"
	"github.com/habench/habench/topology"
)

const gridScenario = `name: grid
topologies:
  - {name: a, kind: single, flavor: mariadb}
  - {name: b, kind: async, nodes: 3, flavor: mariadb, options: {max_connections: "500"}}
workload:
  test: oltp_read_write
  options: {tables: 2, table-size: 1000, threads: 8, time: 5}
sweep:
  threads: [1, 4]
  repeats: 2
  links: [none, 0.6ms]
  knob.sync_binlog: [0, 1]
  test: [oltp_read_write, oltp_read_only]
  option.innodb_buffer_pool_size: [64M, 128M]
cell:
  warmup: 2s
`

func mustParse(t *testing.T, y string) *Scenario {
	t.Helper()
	s, err := ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSweepGridOrder: the grid is expanded topology, option, knob, links, test, threads,
// repeat (whatever the file's order), so each deployment serves one contiguous run of
// cells, and the option values are merged into the deployed spec.
func TestSweepGridOrder(t *testing.T) {
	p, err := mustParse(t, gridScenario).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range p.Axes {
		names = append(names, a.Name)
	}
	want := []string{"topology", "option.innodb_buffer_pool_size", "knob.sync_binlog", "links", "test", "threads", "repeat"}
	if !slices.Equal(names, want) {
		t.Fatalf("axes %v, want %v", names, want)
	}
	if len(p.Cells) != 2*2*2*2*2*2*2 || len(p.Deployments) != 4 {
		t.Fatalf("%d cells in %d deployments, want 128 in 4", len(p.Cells), len(p.Deployments))
	}
	// Innermost axis fastest.
	first := []string{"topology=a option.innodb_buffer_pool_size=64M knob.sync_binlog=0 links=none test=oltp_read_write threads=1 repeat=1",
		"topology=a option.innodb_buffer_pool_size=64M knob.sync_binlog=0 links=none test=oltp_read_write threads=1 repeat=2",
		"topology=a option.innodb_buffer_pool_size=64M knob.sync_binlog=0 links=none test=oltp_read_write threads=4 repeat=1"}
	for i, w := range first {
		if got := p.Label(p.Cells[i]); got != w {
			t.Errorf("cell %d: %s, want %s", i+1, got, w)
		}
	}
	next := 1
	for i, d := range p.Deployments {
		if len(d.Cells) != 32 {
			t.Errorf("deployment %d has %d cells", i+1, len(d.Cells))
		}
		for _, c := range d.Cells {
			if c.Index != next || c.Deployment != d {
				t.Fatalf("deployment %d: cell %d out of order (want %d)", d.Index, c.Index, next)
			}
			next++
			if c.Topology != d.Spec.Name || d.Spec.Options["innodb_buffer_pool_size"] != c.Values["option.innodb_buffer_pool_size"] {
				t.Errorf("cell %d %v on deployment %s %v", c.Index, c.Values, d.Spec.Name, d.Spec.Options)
			}
		}
	}
	b := p.Deployments[3]
	if b.Spec.Name != "b" || b.Spec.Options["max_connections"] != "500" || b.Spec.Options["innodb_buffer_pool_size"] != "128M" {
		t.Errorf("last deployment spec %+v", b.Spec)
	}
	// The topology's own options are not changed by the axis.
	if _, ok := mustParse(t, gridScenario).Topologies[1].Options["innodb_buffer_pool_size"]; ok {
		t.Error("option axis leaked into the scenario's topology")
	}
	c := p.Cells[127]
	if c.Options.Threads != 4 || c.Repeat != 2 || c.Test != "oltp_read_only" || c.Links.All != "0.6ms" ||
		len(c.Knobs) != 1 || c.Knobs[0].Settings[0] != (Setting{"sync_binlog", "1"}) || c.Options.Warmup != 2*time.Second {
		t.Errorf("last cell %+v", c)
	}
	noted := 0
	for _, c := range p.Cells {
		if c.Note != "" {
			noted++
			// The single node's links=0.6ms cells are its links=none cells again: not run.
			if c.Topology != "a" || c.Values["links"] != "0.6ms" || c.Reuse == nil || c.Reuse.Index != c.Index-8 ||
				c.Reuse.Values["links"] != "none" || !strings.Contains(c.Note, "cell "+fmt.Sprint(c.Index-8)+"'s runs stand for this cell") || c.Estimate != 0 {
				t.Errorf("cell %d: %v %s, estimate %v", c.Index, c.Values, c.Note, c.Estimate)
			}
		}
	}
	if noted != 32 {
		t.Errorf("%d cells noted, want the 32 links cells of the single node (not run: they reuse the links=none cells)", noted)
	}
}

// TestSweepWithoutSweepSection: a plain scenario is one cell per topology, in order.
func TestSweepWithoutSweepSection(t *testing.T) {
	b, err := os.ReadFile("../scenarios/quick.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := mustParse(t, string(b)).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 3 || len(p.Deployments) != 3 || p.Cells[2].Topology != "qsemi" || p.Cells[0].Options.Time != 20*time.Second {
		t.Errorf("quick plan: %d cells, %d deployments", len(p.Cells), len(p.Deployments))
	}
	// Scenario-wide links leave a single node unimpaired (it runs, not skipped).
	p, err = mustParse(t, string(b)+"links: 1ms\n").Plan("")
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Cells[0]; c.Note != "" || c.Estimate != 22*time.Second || p.Cells[1].Estimate != 26*time.Second {
		t.Errorf("single node with scenario links: note %q, estimate %v; async %v", c.Note, c.Estimate, p.Cells[1].Estimate)
	}
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
	d, fc := p.axisNamed("knob.durability"), p.axisNamed("knob.fc")
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
	if k := p2.Cells[1].Knobs; len(k) != 2 || k[0].Settings[0].Name != "innodb_flush_log_at_trx_commit" || k[1].Settings[0] != (Setting{"gcs.fc_limit", "64"}) {
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
	one := &Axis{Name: "knob.sync_binlog", Kind: AxisKnob}
	if v, w := readBackValue(one, []Setting{{"sync_binlog", "ON"}}, map[string]map[string]string{"sync_binlog": {"n1": "1"}}); v != "1" || len(w) != 0 {
		t.Errorf("ON read back as 1: %q %v", v, w)
	}
	if v, w := readBackValue(one, []Setting{{"max_connections", "100"}}, map[string]map[string]string{"max_connections": {"n1": "151"}}); v != "151" || len(w) != 1 {
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

// TestSweepParseErrors: every bad sweep, cell or scale input is one error naming the field,
// the value and, where the YAML has one, the line.
func TestSweepParseErrors(t *testing.T) {
	base := "name: x\ntopologies:\n  - {name: a, kind: single, flavor: mariadb}\n  - {name: b, kind: async, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	for in, want := range map[string]string{
		base + "sweep:\n  colour: [red]\n":                             `line 8: sweep "colour": unknown axis`,
		base + "sweep:\n  threads: [1, 0]\n":                           `line 8: sweep.threads "0": want whole numbers >= 1`,
		base + "sweep:\n  threads: [4, 4]\n":                           `sweep.threads "4": value given twice`,
		base + "sweep:\n  threads: []\n":                               `sweep.threads "": want at least one value`,
		base + "sweep:\n  threads: [1]\n  threads: [2]\n":              `line 9: sweep.threads "": axis given twice`,
		base + "sweep:\n  repeats: 0\n":                                `sweep.repeats "0": want a whole number from 1 to 1000`,
		base + "sweep:\n  topology: [a, zz]\n":                         `line 8: sweep.topology "zz": not one of the topologies' names`,
		base + "sweep:\n  test: [oltp_x]\n":                            `sweep.test "oltp_x"`,
		base + "sweep:\n  knob.sync+binlog: [0]\n":                     `sweep.knob.sync+binlog "sync+binlog": not a variable name`,
		base + "sweep:\n  knob.d: [{\"n2:sync_binlog\": 1}]\n":         `sweep.knob.d "n2:sync_binlog": not a variable name (a knob axis sets every node`,
		base + "sweep:\n  knob.d:\n    - {a: 1, b: 1}\n    - {a: 0}\n": `line 10: sweep.knob.d "a=0": every value must set the same variables`,
		base + "sweep:\n  knob.sync_binlog: []\n":                      `line 8: sweep.knob.sync_binlog "": want at least one value`,
		base + "sweep:\n  option.sync_binlog: []\n":                    `line 8: sweep.option.sync_binlog "": want at least one value`,
		base + "sweep:\n  knob.sync_binlog:\n":                         `line 8: sweep.knob.sync_binlog "": want a list of plain values`,
		base + "sweep:\n  knob.sync_binlog: [1, \"\"]\n":               `line 8: sweep.knob.sync_binlog "": want a list of plain values`,
		base + "sweep:\n  knob.d: [[1]]\n":                             `sweep.knob.d "": want a list of values`,
		base + "sweep:\n  links: [none, 5]\n":                          `links.all "5"`,
		base + "sweep:\n  links: [{link: {n1->n9: 1ms}}]\n":            `line 8: sweep.links.link.n1->n9 "1ms": topology b`,
		base + "sweep:\n  links: [{nodes: 1}]\n":                       `line 8: links: unknown key "nodes"`,
		base + "links: 1ms\nsweep:\n  links: [none, 1ms]\n":            `sweep.links "": the scenario also has links:`,
		base + "network: loopback\nsweep:\n  links: [1ms]\n":           `sweep.links "1ms": impairing links needs network netns`,
		base + "sweep:\n  option.server_id: [5]\n":                     `options "server_id": set by habench`,
		"name: x\ntopologies:\n  - {provider: existing, cluster: prod}\nworkload: {test: oltp_read_write}\nsweep:\n  option.sync_binlog: [0]\n": `sweep.option.sync_binlog "0": topology prod is an existing cluster`,
		"name: x\ntopologies:\n  - {provider: existing, cluster: prod}\nworkload: {test: oltp_read_write}\ncell: {restart: true}\n":             `cell.restart "true": topology prod is an existing cluster`,
		base + "sweep:\n  topology: [b]\nbaseline: a\n":                                      `baseline "a": not in sweep.topology`,
		base + "sweep: [threads]\n":                                                          `line 7: sweep "": want a mapping of axes`,
		base + "cell:\n  prepare: sometimes\n":                                               `cell.prepare "sometimes": want reuse or reprepare`,
		base + "cell:\n  restart: maybe\n":                                                   `line 8: value maybe: want true or false`,
		base + "cell:\n  warmup: soon\n":                                                     `line 8: duration "soon": want a duration like 10s`,
		base + "cell:\n  drop_cache: true\n":                                                 `line 8: unknown key "drop_cache"`,
		base + "  options: {warmup-time: 3}\ncell: {warmup: 2s}\n":                           `cell.warmup "2s": workload.options.warmup-time is set too`,
		base + "  options: {time: 0}\n":                                                      `workload.time "0": with events 0 a cell would never end`,
		base + "  options: {time: 10}\nscales:\n  medium: {workload: {time: 0}}\n":           `scales.medium.workload.time "0": with events 0`,
		base + "scales:\n  tiny: {}\n":                                                       `line 8: unknown key "tiny"`,
		base + "scales:\n  small: {workload: {threads: 0}}\n":                                `scale small: scales.small.workload: --threads "0"`,
		base + "scales:\n  small: {workload: {colour: 1}}\n":                                 `scales.small.workload.colour "1"`,
		base + "scales:\n  small: {sweep: {threads: [1]}}\n":                                 `line 8: scales.small.sweep.threads "": not an axis of the scenario's sweep`,
		base + "sweep: {knob.d: [{a: 1}]}\nscales:\n  medium: {sweep: {knob.d: [{b: 1}]}}\n": `scales.medium.sweep.knob.d "b": must set the same variables as the sweep's axis (a)`,
	} {
		_, err := ParseScenario([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant it to contain %s", in, err, want)
		}
	}
	// An error of the file as written is reported as such, not as a scale profile's.
	for _, in := range []string{base + "sweep:\n  topology: [zz]\n", base + "sweep:\n  links: [none, 5]\n", base + "sweep:\n  test: [oltp_x]\n"} {
		if _, err := ParseScenario([]byte(in)); err == nil || strings.HasPrefix(err.Error(), "scale ") {
			t.Errorf("%q: got %v, want an error without a scale prefix", in, err)
		}
	}
}

// TestScaleProfiles: small and medium cap the file's sizes (ScaleCaps), the file's own
// profile overrides the caps, full is the file as written.
func TestScaleProfiles(t *testing.T) {
	y := `name: x
topologies:
  - {name: a, kind: single, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 100, table-size: 4000000, threads: 120, time: 1800}
sweep:
  threads: [5, 10, 20, 40, 80, 200]
  repeats: 3
cell: {warmup: 60s}
scales:
  medium:
    workload: {table-size: 250000}
    sweep:
      threads: [5, 200]
    cell: {warmup: 30s}
`
	s := mustParse(t, y)
	threads := func(p *Plan) []string { return p.axis(AxisThreads).Labels() }
	full, _ := s.Plan("full")
	o := full.Options
	if o.Tables != 100 || o.TableSize != 4000000 || o.Time != 1800*time.Second || o.Warmup != time.Minute || len(threads(full)) != 6 || len(full.axis(AxisRepeat).Values) != 3 {
		t.Errorf("full: %+v threads %v", o, threads(full))
	}
	small, err := s.Plan("small")
	if err != nil {
		t.Fatal(err)
	}
	o = small.Options
	if o.Tables != 4 || o.TableSize != 10000 || o.Time != 10*time.Second || o.Warmup != 2*time.Second || o.Threads != 16 {
		t.Errorf("small options: %+v", o)
	}
	if got := threads(small); !slices.Equal(got, []string{"5", "10", "16"}) || len(small.axis(AxisRepeat).Values) != 1 || len(small.Cells) != 3 {
		t.Errorf("small threads %v, repeats %d, cells %d", got, len(small.axis(AxisRepeat).Values), len(small.Cells))
	}
	med, err := s.Plan("medium")
	if err != nil {
		t.Fatal(err)
	}
	o = med.Options
	if o.Tables != 10 || o.TableSize != 250000 || o.Time != time.Minute || o.Warmup != 30*time.Second {
		t.Errorf("medium options: %+v", o)
	}
	if got := threads(med); !slices.Equal(got, []string{"5", "200"}) || len(med.axis(AxisRepeat).Values) != 2 {
		t.Errorf("medium threads %v (the profile's own, uncapped), repeats %d", got, len(med.axis(AxisRepeat).Values))
	}
	if _, err := s.Plan("huge"); err == nil || !strings.Contains(err.Error(), `--scale "huge"`) {
		t.Errorf("bad scale: %v", err)
	}
}

// TestDryRunPlan: Print lists every cell with its values and estimate, the skipped ones
// with why, done cells of a resumed directory, and the estimate's total and model.
func TestDryRunPlan(t *testing.T) {
	y := `name: x
topologies:
  - {name: a, kind: single, flavor: mariadb}
  - {name: b, kind: async, nodes: 3, flavor: mysql}
workload: {test: oltp_read_write, options: {tables: 2, table-size: 12000, time: 10}}
sweep:
  links: [none, 0.6ms]
  threads: [1, 4]
cell: {warmup: 2s, restart: true, drop_caches: true}
`
	p, err := mustParse(t, y).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	// Estimates by the documented model.
	a, b := p.Deployments[0], p.Deployments[1]
	if a.Deploy != 1100*time.Millisecond || b.Deploy != 8500*time.Millisecond {
		t.Errorf("deploy estimates %v %v", a.Deploy, b.Deploy)
	}
	// 24000 rows: MariaDB 120k rows/s on one node, MySQL 28k rows/s with replicas.
	rows, mysqlReplicated := 24000.0, 28000.0
	if a.Prepare != time.Second+200*time.Millisecond || b.Prepare != time.Second+time.Duration(rows/mysqlReplicated*float64(time.Second)) {
		t.Errorf("prepare estimates %v %v", a.Prepare, b.Prepare)
	}
	// b, links 0.6ms: warmup 2 + time 10 + 2 + links 4 + restart 3 nodes x 3 s + drop 1.
	if c := p.Cells[6]; c.Estimate != 28*time.Second {
		t.Errorf("cell 7 estimate %v", c.Estimate)
	}
	total, deploys, cells := p.Estimate(nil)
	if want := a.Deploy + a.Prepare + b.Deploy + b.Prepare + 2*EstimateDestroy; deploys != want {
		t.Errorf("deploys %v, want %v", deploys, want)
	}
	var sum time.Duration
	for _, c := range p.Cells {
		sum += c.Estimate
	}
	if cells != sum || total != deploys+cells {
		t.Errorf("cells %v want %v, total %v", cells, sum, total)
	}
	var out bytes.Buffer
	p.Print(&out, map[int]string{1: StatusDone, 5: StatusFailed})
	txt := out.String()
	for _, w := range []string{
		"axes (outermost first): topology [a, b] x links [none, 0.6ms] (changes against none) x threads [1, 4] (changes against 1)",
		"cell policy: prepare reuse, restart yes, drop caches yes",
		"deployment 2: b (async, 3 nodes, mysql, rootfs /var/cache/habench/rootfs/mysql-sid installation): deploy ~9s, prepare ~2s",
		"cell 1  topology=a links=none threads=1  done (not run again)",
		"cell 3  topology=a links=0.6ms threads=1  not run: reuses cell 1 (a has 1 node, no links)",
		"cell 5  topology=b links=none threads=1  ~24s (same-path control: with the userspace link, zero delay through it) (failed before: runs again)",
		"cell 8  topology=b links=0.6ms threads=4  ~28s",
		"8 cells in 2 deployments (2 not run: they reuse a cell that cannot differ), 1 done already; estimated",
		"estimate: per deployment deploy (MariaDB 0.5s + 0.6s/node",
	} {
		if !strings.Contains(txt, w) {
			t.Errorf("dry run lacks %q:\n%s", w, txt)
		}
	}
}

// TestResumeBookkeeping: a resumed directory is checked (same file, same scale, same grid)
// before anything is deployed; a directory whose cells are all done or skipped runs
// nothing and records the invocation.
func TestResumeBookkeeping(t *testing.T) {
	raw := []byte(gridScenario)
	s := mustParse(t, gridScenario)
	p, _ := s.Plan("small")
	dir := t.TempDir()
	f := newSweepFile(p, raw)
	for i := range f.Cells {
		if f.Cells[i].Status == StatusPending {
			f.Cells[i].Status = StatusDone
		}
	}
	if err := writeJSONAtomic(filepath.Join(dir, "sweep.json"), f); err != nil {
		t.Fatal(err)
	}
	sb := &cluster.Sandbox{StateDir: t.TempDir()}
	run := func(s *Scenario, scale string) error {
		r := &ScenarioRun{Scenario: s, Sandbox: sb, ResumeDir: dir, Scale: scale}
		_, _, err := r.Run(context.Background())
		return err
	}
	var fe *topology.FieldError
	other := mustParse(t, strings.Replace(gridScenario, "time: 5", "time: 6", 1))
	if err := run(other, ""); !errors.As(err, &fe) || !strings.Contains(err.Error(), "another scenario file") || !strings.Contains(err.Error(), filepath.Join(dir, "scenario.yaml")) {
		t.Errorf("other file: %v", err)
	}
	if err := run(s, "medium"); !errors.As(err, &fe) || !strings.Contains(err.Error(), "run at scale small") {
		t.Errorf("other scale: %v", err)
	}
	if err := run(s, ""); err != nil {
		t.Fatalf("nothing to do: %v", err)
	}
	g, err := ReadSweepFile(dir)
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
	if err := (&ScenarioRun{Scenario: s, Sandbox: sb, ResumeDir: t.TempDir()}).runErr(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "not a sweep directory") {
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
	s := mustParse(t, gridScenario)
	p, _ := s.Plan("")
	f := newSweepFile(p, []byte(gridScenario))
	if f.ScenarioSHA256 != ScenarioSHA256([]byte(gridScenario)) || f.Scale != "full" || f.Baseline != "a" || len(f.Cells) != 128 || len(f.Axes) != 7 {
		t.Fatalf("file %+v", f)
	}
	if f.Axes[1].Name != "option.innodb_buffer_pool_size" || !slices.Equal(f.Axes[1].Variables, []string{"innodb_buffer_pool_size"}) {
		t.Errorf("axis %+v", f.Axes[1])
	}
	c := f.Cells[127]
	if c.Status != StatusPending || c.Requested["sync_binlog"] != "1" || c.Requested["innodb_buffer_pool_size"] != "128M" || c.Links != "0.6ms" || c.Threads != 4 || c.Repeat != 2 || c.Kind != "async" {
		t.Errorf("cell 128 %+v", c)
	}
	for i, c := range f.Cells {
		reuse := p.Cells[i].Reuse
		if (reuse == nil && c.Status != StatusPending) || (reuse != nil && (c.Status != StatusReused || c.ReusedFrom != reuse.Index || c.Links != "none")) {
			t.Errorf("cell %d %+v", i+1, c)
		}
	}
	if f.Axes[3].Name != "links" || !slices.Equal(f.Axes[3].Inert, []string{"a"}) || f.Axes[3].Reference != "none" {
		t.Errorf("links axis %+v: want inert for the single node a, reference none", f.Axes[3])
	}
}

// TestShippedScenarios: every file in scenarios/ parses, expands at every scale, and its
// small scale is estimated to take minutes.
func TestShippedScenarios(t *testing.T) {
	files, _ := filepath.Glob("../scenarios/*.yaml")
	if len(files) < 8 {
		t.Fatalf("scenarios: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseScenario(b)
			if err != nil {
				t.Fatal(err)
			}
			if s.Description == "" {
				t.Error("no description")
			}
			for _, sc := range ScaleNames() {
				p, err := s.Plan(sc)
				if err != nil {
					t.Fatalf("%s: %v", sc, err)
				}
				total, _, _ := p.Estimate(nil)
				if sc == ScaleSmall && total > 12*time.Minute {
					t.Errorf("small scale estimated at %v", total)
				}
				t.Logf("%s: %d cells, estimated %v", sc, len(p.Cells), FormatDuration(total))
			}
		})
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
		{y, "bs", "the single primary (default)"},
		{y + "baseline: ba\n", "ba", "the scenario's baseline"},
		{noSingle, "ba", "the first topology (no single primary)"},
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
			res.Runs = append(res.Runs, &report.Run{Name: p.Cells[i].Topology, Topology: p.Cells[i].Topology, Manifest: report.Manifest{Extra: e}})
		}
		if b, why, err := res.Baseline(""); err != nil || b == nil || b.Name != c.want || why != c.why || p.baseline() != c.want {
			t.Errorf("report baseline %v (%s, %v), plan baseline %s, want %s", b, why, err, p.baseline(), c.want)
		}
	}
}
