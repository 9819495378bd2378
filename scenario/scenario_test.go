package scenario_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/habench/habench/experiment" // the fault actions register their specs
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// gridScenarioFile is the grid scenario: 2 topologies, a sweep of 128 cells (the
// scenario package's testdata, shared with its tests).
const gridScenarioFile = "testdata/grid.yaml"

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

// TestSweepGridOrder: the grid is expanded topology, option, knob, links, test, threads,
// repeat (whatever the file's order), so each deployment serves one contiguous run of
// cells (run interleaved by default: their repeats in turn; blocked on request), and the
// option values are merged into the deployed spec.
func TestSweepGridOrder(t *testing.T) {
	p, err := mustParse(t, gridScenario(t)).Plan("")
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
	// Each deployment serves a contiguous run of cell indices; it runs them interleaved
	// (the default cell.order): every cell's repeat 1 in grid order, then every repeat 2.
	next := 1
	for i, d := range p.Deployments {
		if len(d.Cells) != 32 {
			t.Errorf("deployment %d has %d cells", i+1, len(d.Cells))
		}
		var want []int
		for r := 1; r <= 2; r++ {
			for j := next; j < next+32; j++ {
				if p.Cells[j-1].Repeat == r {
					want = append(want, j)
				}
			}
		}
		var got []int
		for _, c := range d.Cells {
			got = append(got, c.Index)
			if c.Deployment != d {
				t.Fatalf("deployment %d: cell %d of deployment %d", d.Index, c.Index, c.Deployment.Index)
			}
			if c.Topology != d.Spec.Name || d.Spec.Options["innodb_buffer_pool_size"] != c.Values["option.innodb_buffer_pool_size"] {
				t.Errorf("cell %d %v on deployment %s %v", c.Index, c.Values, d.Spec.Name, d.Spec.Options)
			}
		}
		if !slices.Equal(got, want) || got[1] != next+2 {
			t.Fatalf("deployment %d runs %v, want %v (repeat 1 of each cell, then repeat 2)", d.Index, got, want)
		}
		next += 32
	}
	// cell.order blocked: the grid order, each cell's repeats together.
	blocked, err := mustParse(t, strings.Replace(gridScenario(t), "cell:\n", "cell:\n  order: blocked\n", 1)).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range blocked.Deployments[0].Cells {
		if c.Index != i+1 {
			t.Fatalf("blocked: deployment 1 runs cell %d at %d", c.Index, i+1)
		}
	}
	if _, err := scenario.ParseScenario([]byte(strings.Replace(gridScenario(t), "cell:\n", "cell:\n  order: random\n", 1))); err == nil || !strings.Contains(err.Error(), `cell.order "random": want interleaved`) {
		t.Errorf("cell.order random: %v", err)
	}
	b := p.Deployments[3]
	if b.Spec.Name != "b" || b.Spec.Options["max_connections"] != "500" || b.Spec.Options["innodb_buffer_pool_size"] != "128M" {
		t.Errorf("last deployment spec %+v", b.Spec)
	}
	// The topology's own options are not changed by the axis.
	if _, ok := mustParse(t, gridScenario(t)).Topologies[1].Options["innodb_buffer_pool_size"]; ok {
		t.Error("option axis leaked into the scenario's topology")
	}
	c := p.Cells[127]
	if c.Options.Threads != 4 || c.Repeat != 2 || c.Test != "oltp_read_only" || c.Links.All != "0.6ms" ||
		len(c.Knobs) != 1 || c.Knobs[0].Settings[0] != (scenario.Setting{"sync_binlog", "1"}) || c.Options.Warmup != 2*time.Second {
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
		_, err := scenario.ParseScenario([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant it to contain %s", in, err, want)
		}
	}
	// An error of the file as written is reported as such, not as a scale profile's.
	for _, in := range []string{base + "sweep:\n  topology: [zz]\n", base + "sweep:\n  links: [none, 5]\n", base + "sweep:\n  test: [oltp_x]\n"} {
		if _, err := scenario.ParseScenario([]byte(in)); err == nil || strings.HasPrefix(err.Error(), "scale ") {
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
	threads := func(p *scenario.Plan) []string { return p.AxisOf(scenario.AxisThreads).Labels() }
	full, _ := s.Plan("full")
	o := full.Options
	if o.Tables != 100 || o.TableSize != 4000000 || o.Time != 1800*time.Second || o.Warmup != time.Minute || len(threads(full)) != 6 || len(full.AxisOf(scenario.AxisRepeat).Values) != 3 {
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
	if got := threads(small); !slices.Equal(got, []string{"5", "10", "16"}) || len(small.AxisOf(scenario.AxisRepeat).Values) != 1 || len(small.Cells) != 3 {
		t.Errorf("small threads %v, repeats %d, cells %d", got, len(small.AxisOf(scenario.AxisRepeat).Values), len(small.Cells))
	}
	med, err := s.Plan("medium")
	if err != nil {
		t.Fatal(err)
	}
	o = med.Options
	if o.Tables != 10 || o.TableSize != 250000 || o.Time != time.Minute || o.Warmup != 30*time.Second {
		t.Errorf("medium options: %+v", o)
	}
	if got := threads(med); !slices.Equal(got, []string{"5", "200"}) || len(med.AxisOf(scenario.AxisRepeat).Values) != 2 {
		t.Errorf("medium threads %v (the profile's own, uncapped), repeats %d", got, len(med.AxisOf(scenario.AxisRepeat).Values))
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
	if want := a.Deploy + a.Prepare + b.Deploy + b.Prepare + 2*scenario.EstimateDestroy; deploys != want {
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
	p.Print(&out, map[int]string{1: schema.StatusDone, 5: schema.StatusFailed})
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
			s, err := scenario.ParseScenario(b)
			if err != nil {
				t.Fatal(err)
			}
			if s.Description == "" {
				t.Error("no description")
			}
			for _, sc := range scenario.ScaleNames() {
				p, err := s.Plan(sc)
				if err != nil {
					t.Fatalf("%s: %v", sc, err)
				}
				total, _, _ := p.Estimate(nil)
				if sc == scenario.ScaleSmall && total > 12*time.Minute {
					t.Errorf("small scale estimated at %v", total)
				}
				t.Logf("%s: %d cells, estimated %v", sc, len(p.Cells), scenario.FormatDuration(total))
			}
		})
	}
}

// TestCheckerSpecRefused: bad checker sections name the field and the value.
func TestCheckerSpecRefused(t *testing.T) {
	for _, c := range []struct {
		s     scenario.CheckerSpec
		field string
	}{
		{scenario.CheckerSpec{Workload: "elle"}, "checker.workload"},
		{scenario.CheckerSpec{Workload: "list-append", Keys: 2000}, "checker.keys"},
		{scenario.CheckerSpec{Workload: "register", Keys: 2000}, "checker.keys"},
		{scenario.CheckerSpec{Workload: "bank", Keys: 1}, "checker.keys"},
		{scenario.CheckerSpec{Workload: "bank", Threads: -2}, "checker.threads"},
		{scenario.CheckerSpec{Workload: "register", Locking: "share"}, "checker.locking"},
		{scenario.CheckerSpec{Workload: "register", Isolation: "snapshot"}, "checker.isolation"},
		{scenario.CheckerSpec{Workload: "list-append", Rate: -5}, "checker.rate"},
		{scenario.CheckerSpec{Workload: "bank", Realtime: true}, "checker.realtime"},
		{scenario.CheckerSpec{Workload: "register", ReadNodes: scenario.CheckerReadNodes{scenario.WorkloadNodes{All: []string{"n2"}}}}, "checker.read_nodes"},
	} {
		var fe *topology.FieldError
		if err := c.s.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a FieldError on %s", c.s, err, c.field)
		}
	}
	if err := (&scenario.CheckerSpec{Workload: "bank", Keys: 10, Isolation: "serializable"}).Validate(); err != nil {
		t.Errorf("a valid bank: %v", err)
	}
	if err := (&scenario.CheckerSpec{Workload: "list-append", Realtime: true}).Validate(); err != nil {
		t.Errorf("a valid realtime list-append: %v", err)
	}
}

// TestCheckerReadNodes: checker.read_nodes is checked against the topologies' node names
// like workload.read_nodes, under its own name, and refused for register.
func TestCheckerReadNodes(t *testing.T) {
	head := "name: x\ntopologies:\n  - {name: g, kind: galera, nodes: 3, flavor: mariadb}\n  - {name: a, kind: async, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	for in, want := range map[string]string{
		"checker: {workload: list-append, read_nodes: [n3]}\n":       `line 7: checker.read_nodes "n3": topology a has no such node (its nodes are n1..n2)`,
		"checker: {workload: bank, read_nodes: {g: [n2, n2]}}\n":     `checker.read_nodes.g "n2": node given twice`,
		"checker: {workload: bank, read_nodes: {b: [n1]}}\n":         `line 7: checker.read_nodes "b": not one of the topologies' names`,
		"checker: {workload: register, read_nodes: {g: [n2, n3]}}\n": `checker.read_nodes "register": the register workload has no read-only transactions`,
	} {
		_, err := scenario.ParseScenario([]byte(head + in))
		var fe *topology.FieldError
		if err == nil || !strings.Contains(err.Error(), want) || (!strings.Contains(in, "n2, n2") && !errors.As(err, &fe)) {
			t.Errorf("%q: %v, want a FieldError %q", in, err, want)
		}
	}
	s := mustParse(t, head+"checker: {workload: list-append, read_nodes: {g: [n2, n3]}}\n")
	if !slices.Equal(s.Checker.ReadNodes.For("g"), []string{"n2", "n3"}) || s.Checker.ReadNodes.For("a") != nil {
		t.Errorf("per topology: %+v", s.Checker.ReadNodes)
	}
	p, _ := s.Plan("")
	var out bytes.Buffer
	p.Print(&out, nil)
	if !strings.Contains(out.String(), "  the checker's read-only transactions go to n2, n3 (checker.read_nodes)") || strings.Count(out.String(), "checker's read-only") != 1 {
		t.Errorf("plan:\n%s", out.String())
	}
}

func TestParseScenarioErrors(t *testing.T) {
	base := "name: x\ntopologies:\n  - {name: a, kind: single, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	base3 := strings.Replace(base, "kind: single", "kind: async, nodes: 3", 1)
	for _, ok := range []string{base, base + "  failover: off\n", base + "  failover: auto\n"} {
		if _, err := scenario.ParseScenario([]byte(ok)); err != nil {
			t.Fatalf("valid scenario %q: %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		base + "network: wifi\n":                              `network "wifi"`,
		base + "baseline: zz\n":                               `baseline "zz"`,
		base + "  options: {threads: 0}\n":                    "threads",
		base + "  options: {colour: red}\n":                   "workload.options.colour",
		strings.Replace(base, "oltp_read_write", "oltp_x", 1): `workload.test "oltp_x"`,
		base + "extra: 1\n":                                   `unknown key "extra"`,
		base + "links: 5\n":                                   `links.all "5"`,
		base3 + "links: {link: {n1->n9: 1ms}}\n":              `links.link.n1->n9 "1ms"`,
		base3 + "links: {partition: [n4]}\n":                  `links.partition "n4"`,
		base3 + "links:\n  nodes: {n1: 1ms}\n":                `line 7: links: unknown key "nodes"`,
		base + "links: 1ms\nnetwork: loopback\n":              `links "1ms"`,
		"name: x\nworkload: {test: oltp_read_write}\n":        "topologies",
		base + "  failover: on\n":                             `workload.failover "on": want auto`,
	} {
		_, err := scenario.ParseScenario([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want it to mention %s", in, err, want)
		}
	}
}

// TestDeploys: a spec's provider says whether habench deploys it; a spec naming a
// cluster of the state directory, or dsns, is not deployed by the run.
func TestDeploys(t *testing.T) {
	for _, tc := range []struct {
		spec topology.Spec
		want bool
	}{
		{topology.Spec{}, true},
		{topology.Spec{Provider: topology.ProviderSandbox}, true},
		{topology.Spec{Provider: topology.ProviderExisting, ExistingSpec: topology.ExistingSpec{Cluster: "prod"}}, false},
		{topology.Spec{Provider: topology.ProviderExisting, ExistingSpec: topology.ExistingSpec{DSNs: []string{"root@tcp(127.0.0.1:3306)/"}}}, false},
		{topology.Spec{Provider: "no-such-provider"}, false},
	} {
		if got := scenario.Deploys(tc.spec); got != tc.want {
			t.Errorf("Deploys(provider %q cluster %q) = %v, want %v", tc.spec.Provider, tc.spec.Cluster, got, tc.want)
		}
	}
}

// FuzzParseScenario: no scenario file, however malformed, panics the parser; the shipped
// scenarios are the seed corpus. Run: go test -run '^$' -fuzz FuzzParseScenario -fuzztime 5m ./scenario/
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob("../scenarios/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\ntopologies: [{name: a, kind: single}]\nworkload: {test: oltp_read_write}\n"))
	f.Add([]byte("sweep: {threads: [1, 2], links: [none, 0.6ms]}\n"))
	f.Add([]byte("name: x\nworkload: {test: caf\xff}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := scenario.ParseScenario(b)
		if err == nil && s == nil {
			t.Fatal("nil scenario without an error")
		}
	})
}

// TestSnapshotEstimate: with snapshots, one prepare per installation and data shape (the
// first deployment of each flavor); the others copy; group-dr prepares as before.
func TestSnapshotEstimate(t *testing.T) {
	off, err := mustParse(t, snapScenario).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	s := mustParse(t, snapScenario+"snapshots: true\n")
	on, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	d := on.Deployments
	if d[0].SnapKey == "" || d[0].SnapKey != d[1].SnapKey || d[2].SnapKey == d[0].SnapKey || d[3].SnapKey != "" {
		t.Fatalf("keys %q %q %q %q", d[0].SnapKey, d[1].SnapKey, d[2].SnapKey, d[3].SnapKey)
	}
	if d[1].Prepare >= d[0].Prepare || d[1].Prepare >= off.Deployments[1].Prepare {
		t.Errorf("async3 copies the group's snapshot: %v, the group made it %v, without %v", d[1].Prepare, d[0].Prepare, off.Deployments[1].Prepare)
	}
	if d[3].Prepare != off.Deployments[3].Prepare {
		t.Errorf("group-dr: %v, want the prepare %v", d[3].Prepare, off.Deployments[3].Prepare)
	}
	_, depOn, _ := on.Estimate(nil)
	_, depOff, _ := off.Estimate(nil)
	if depOn >= depOff {
		t.Errorf("deploy+prepare with snapshots %v, without %v", depOn, depOff)
	}
	var b bytes.Buffer
	on.Print(&b, nil)
	if !strings.Contains(b.String(), "data from a snapshot ~") || !strings.Contains(b.String(), "snapshots: one prepare per installation") {
		t.Errorf("dry run does not say it:\n%s", b.String())
	}
}

// TestSweepReferenceErrors: reference: names an axis of the sweep and one of its values
// at every scale; errors name the field, the value and the line.
func TestSweepReferenceErrors(t *testing.T) {
	head := "name: x\ntopologies:\n  - {name: a, kind: single, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	for in, want := range map[string]string{
		"sweep:\n  threads: [1, 4]\n  reference: {threads: 8}\n":   `line 8: sweep.reference.threads "8": not one of the axis' values (1, 4)`,
		"sweep:\n  threads: [1, 4]\n  reference: {links: none}\n":  `line 8: sweep.reference.links "none": not an axis of the sweep`,
		"sweep:\n  threads: [1, 4]\n  reference: {topology: a}\n":  `sweep.reference.topology "a": not an axis with a reference (the topologies' reference is baseline:)`,
		"sweep:\n  threads: [1, 4]\n  reference: [threads]\n":      `line 8: sweep.reference`,
		"sweep:\n  threads: [1, 64]\n  reference: {threads: 64}\n": `scale small: line 8: sweep.reference.threads "64": not one of the axis' values at scale small (1, 16)`,
	} {
		_, err := scenario.ParseScenario([]byte(head + in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	s := mustParse(t, head+"sweep:\n  threads: [1, 4]\n  reference: {threads: 4}\n")
	p, _ := s.Plan("")
	if a := p.AxisNamed("threads"); a.Reference != "4" {
		t.Errorf("threads reference %q", a.Reference)
	}
}

// TestWorkloadNodes: workload.nodes, for every topology or per topology, is checked
// against the topologies' node names when the file is parsed, and the plan prints it.
func TestWorkloadNodes(t *testing.T) {
	head := "name: x\ntopologies:\n  - {name: g, kind: galera, nodes: 3, flavor: mariadb}\n  - {name: a, kind: async, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	for in, want := range map[string]string{
		"  nodes: [n3]\n":          `line 7: workload.nodes "n3": topology a has no such node (its nodes are n1..n2)`,
		"  nodes: {g: [n1, n1]}\n": `workload.nodes.g "n1": node given twice`,
		"  nodes: {b: [n1]}\n":     `line 7: workload.nodes "b": not one of the topologies' names`,
		"  nodes: {g: [n4]}\n":     `line 7: workload.nodes.g "n4": topology g has no such node (its nodes are n1..n3)`,
		"  options: {nodes: n1}\n": `workload.options.nodes "n1": the workers' nodes are workload.nodes`,
		"  nodes: [{n1: x}]\n":     `workload.nodes`,
	} {
		_, err := scenario.ParseScenario([]byte(head + in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	s := mustParse(t, head+"  nodes: {g: [n1]}\n")
	if !slices.Equal(s.Workload.Nodes.For("g"), []string{"n1"}) || s.Workload.Nodes.For("a") != nil {
		t.Errorf("per topology: %+v", s.Workload.Nodes)
	}
	if s := mustParse(t, head+"  nodes: [n2, n1]\n"); !slices.Equal(s.Workload.Nodes.For("a"), []string{"n2", "n1"}) {
		t.Errorf("for every topology: %+v", s.Workload.Nodes)
	}
	p, _ := s.Plan("")
	var out bytes.Buffer
	p.Print(&out, nil)
	if !strings.Contains(out.String(), "deployment 1: g (galera, 3 nodes") || !strings.Contains(out.String(), "  workers connect to n1 (workload.nodes); prepare on the writable nodes\n") ||
		strings.Count(out.String(), "workers connect to") != 1 {
		t.Errorf("plan:\n%s", out.String())
	}
}

// TestWorkloadReadNodes: workload.read_nodes is checked like workload.nodes, under its
// own name, and the plan says where the reads go.
func TestWorkloadReadNodes(t *testing.T) {
	head := "name: x\ntopologies:\n  - {name: g, kind: galera, nodes: 3, flavor: mariadb}\n  - {name: a, kind: async, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	for in, want := range map[string]string{
		"  read_nodes: [n3]\n":          `line 7: workload.read_nodes "n3": topology a has no such node (its nodes are n1..n2)`,
		"  read_nodes: {g: [n2, n2]}\n": `workload.read_nodes.g "n2": node given twice`,
		"  read_nodes: {b: [n1]}\n":     `line 7: workload.read_nodes "b": not one of the topologies' names`,
	} {
		_, err := scenario.ParseScenario([]byte(head + in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	s := mustParse(t, head+"  read_nodes: {g: [n2, n3]}\n")
	if !slices.Equal(s.Workload.ReadNodes.For("g"), []string{"n2", "n3"}) || s.Workload.ReadNodes.For("a") != nil || s.Workload.Nodes.For("g") != nil {
		t.Errorf("per topology: %+v", s.Workload)
	}
	p, _ := s.Plan("")
	var out bytes.Buffer
	p.Print(&out, nil)
	if !strings.Contains(out.String(), "  read-only statements go to n2, n3 (workload.read_nodes)") || strings.Count(out.String(), "read-only statements go to") != 1 {
		t.Errorf("plan:\n%s", out.String())
	}
}

// TestSamePathControlPlan: in a links axis with a delay, a multi-node topology's none
// cell is the same-path control (bridge and a single node are not); none is the axis'
// default reference; the dry run says so.
func TestSamePathControlPlan(t *testing.T) {
	s := mustParse(t, "name: x\ntopologies:\n  - {name: a, kind: single, flavor: mariadb}\n  - {name: b, kind: async, nodes: 2, flavor: mariadb}\n"+
		"workload:\n  test: oltp_read_write\nsweep:\n  links: [bridge, none, 0.6ms]\n")
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	var ctl []string
	for _, c := range p.Cells {
		if p.SamePathControl(c) {
			ctl = append(ctl, p.Label(c))
		}
	}
	if !slices.Equal(ctl, []string{"topology=b links=none"}) || p.AxisNamed("links").Reference != "none" {
		t.Errorf("controls %v, reference %q", ctl, p.AxisNamed("links").Reference)
	}
	var out bytes.Buffer
	p.Print(&out, nil)
	for _, w := range []string{"links [bridge, none, 0.6ms] (changes against none)", "topology=b links=none  ~12s (same-path control: with the userspace link, zero delay through it)",
		"topology=a links=none  not run: reuses cell 1", "topology=b links=bridge  ~12s\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("dry run lacks %q:\n%s", w, out.String())
		}
	}
	// Without a delay there is nothing to control for.
	s = mustParse(t, "name: x\ntopologies:\n  - {name: b, kind: async, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\nsweep:\n  links: [bridge, none]\n")
	p, _ = s.Plan("")
	for _, c := range p.Cells {
		if p.SamePathControl(c) {
			t.Errorf("cell %s is a control without a delayed cell", p.Label(c))
		}
	}
}

const snapScenario = `name: snap
topologies:
  - {name: group3, kind: group, nodes: 3, flavor: mysql}
  - {name: async3, kind: async, nodes: 3, flavor: mysql}
  - {name: galera3, kind: galera, nodes: 3, flavor: mariadb}
  - {name: dr, kind: group-dr, nodes: 6, flavor: mysql}
workload:
  test: oltp_read_write
  options: {tables: 8, table-size: 1000000, time: 10}
`

// TestSnapshotEstimateOnHosts: on the user's hosts the deployment that makes a snapshot
// (on the first host) also streams it to each of its other hosts; a later deployment on
// the same hosts only copies it locally, one on a new host streams it there once.
func TestSnapshotEstimateOnHosts(t *testing.T) {
	on := func(name, kind, hosts string) string {
		return fmt.Sprintf("  - {name: %s, kind: %s, nodes: 3, flavor: mariadb, provider: hosts, hosts: [%s], host_dir: /tmp/hb, ssh: {user: root}}\n", name, kind, hosts)
	}
	y := "name: snaph\nsnapshots: true\ntopologies:\n" + on("a1", "async", "h1, h2, h3") + on("g1", "galera", "h1, h2, h3") +
		on("a2", "async", "h1, h2, h4") + "workload:\n  test: oltp_read_write\n  options: {tables: 8, table-size: 1000000, time: 10}\n"
	p, err := mustParse(t, y).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	d := p.Deployments
	if d[0].SnapKey == "" || d[1].SnapKey != d[0].SnapKey || d[2].SnapKey != d[0].SnapKey {
		t.Fatalf("keys %q %q %q", d[0].SnapKey, d[1].SnapKey, d[2].SnapKey)
	}
	stream, copyAsync, copyGalera := scenario.EstimateSnapshotStream(p.Options), scenario.EstimateSnapshotCopy(d[2].Spec, p.Options), scenario.EstimateSnapshotCopy(d[1].Spec, p.Options)
	if d[1].Prepare != copyGalera {
		t.Errorf("galera on the same hosts: %v, want only the local copies %v", d[1].Prepare, copyGalera)
	}
	if d[2].Prepare != copyAsync+stream {
		t.Errorf("async with a new host h4: %v, want the copies %v and one stream %v", d[2].Prepare, copyAsync, stream)
	}
	if make := d[0].Prepare - copyAsync; make < 2*stream {
		t.Errorf("the making deployment: %v beyond its copies, want at least the two streams %v", make, 2*stream)
	}
}
