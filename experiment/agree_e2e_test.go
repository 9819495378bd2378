package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/habench/habench/internal/testmachine"
	"github.com/habench/habench/schema"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/stats"
	"github.com/habench/habench/topology"
)

// TestSweepRepeatsAgreeOnServers: a short real sweep (a MariaDB single primary and a
// 2-node async, long_query_time 10 / 20, which cannot change TPS, 3 repeats of 3 s
// cells): the terminal table, comparison.md, sweep.json, report.md and report.html give
// the same percentages; every point has 3 runs and a 95% CI; each verdict follows the
// Welch interval recorded with it, and "within noise" is printed wherever one includes 0.
func TestSweepRepeatsAgreeOnServers(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	sb := testenv.Store(t)
	single, async := testenv.Name(t, "swqs"), testenv.Name(t, "swqa")
	y := `name: swrepeats
topologies:
  - {name: ` + single + `, kind: single, flavor: mariadb}
  - {name: ` + async + `, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, threads: 2, time: 3, report-interval: 1}
sweep:
  knob.long_query_time: [10, 20]
  repeats: 3
cell: {warmup: 1s}
`
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := &ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir()}
	dir, rows, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var term bytes.Buffer
	report.PrintComparison(&term, rows)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cmpMD, repMD, repHTML := read("comparison.md"), read("report.md"), read("report.html")
	var f schema.SweepFile
	if err := json.Unmarshal([]byte(read("sweep.json")), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Summary) != 4 {
		t.Fatalf("sweep.json: %d points, want 4:\n%s", len(f.Summary), term.String())
	}
	noise := false
	var want []string
	for _, c := range f.Summary {
		if c.TPS.N != 3 || !c.TPS.HasCI() || *c.TPS.CILo > c.TPS.Mean || *c.TPS.CIHi < c.TPS.Mean || c.TPS.Min > c.TPS.Mean || c.TPS.Max < c.TPS.Mean {
			t.Errorf("%s %s: TPS %s", c.Topology, c.Group, c.TPS)
		}
		changes := []*stats.Change{c.VsBase}
		want = append(want, fmt.Sprintf("%.1f%%", c.VsBase.Pct))
		if a := c.AlongAxis("knob.long_query_time"); a != nil {
			changes = append(changes, &a.TPS)
			if a.TPS.Verdict != stats.Reference {
				want = append(want, fmt.Sprintf("%+.1f%%", a.TPS.Delta()))
			}
		}
		for _, ch := range changes {
			if ch.Verdict == stats.Reference {
				continue
			}
			overlap := *ch.DiffLoPct <= 0 && *ch.DiffHiPct >= 0
			if (ch.Verdict == stats.WithinNoise) != overlap || (ch.Verdict == stats.Difference) == overlap {
				t.Errorf("%s %s: verdict %q with the difference's CI %.2f..%.2f%%", c.Topology, c.Group, ch.Verdict, *ch.DiffLoPct, *ch.DiffHiPct)
			}
			noise = noise || overlap
		}
	}
	got := map[string][]string{"terminal": pcts(term.String()), "comparison.md": pcts(cmpMD),
		"report.md": pcts(section(t, repMD, "## Cells: repeats summarised"))}
	h := repHTML[strings.Index(repHTML, `<h2 id="cells">`):]
	got["report.html"] = pcts(html.UnescapeString(h[:strings.Index(h, "</table>")]))
	for name, g := range got {
		for _, w := range want {
			if !slices.Contains(g, w) {
				t.Errorf("%s lacks sweep.json's %s (has %v)", name, w, g)
			}
		}
	}
	for _, name := range []string{"comparison.md", "report.md", "report.html"} {
		if !slices.Equal(got["terminal"], got[name]) {
			t.Errorf("percentages differ: terminal %v, %s %v", got["terminal"], name, got[name])
		}
	}
	for name, out := range map[string]string{"terminal": term.String(), "comparison.md": cmpMD, "report.md": repMD, "report.html": repHTML} {
		if noise != strings.Contains(out, "(within noise)") {
			t.Errorf("%s: says within noise %v, an interval includes 0: %v", name, !noise, noise)
		}
		if !strings.Contains(out, "95% CI") {
			t.Errorf("%s has no 95%% CI", name)
		}
	}
	t.Logf("terminal:\n%s", term.String())
}

// TestWorkloadNodesOnServers: workload.nodes sends a read-only load to an async replica
// (the writable source still gets the prepare): the run's manifest lists the replica as
// the workers' only endpoint, and the run reads there.
func TestWorkloadNodesOnServers(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	sb := testenv.Store(t)
	async := testenv.Name(t, "swqn")
	y := `name: swnodes
topologies:
  - {name: ` + async + `, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_read_only
  nodes: [n2]
  options: {tables: 1, table-size: 500, threads: 1, time: 2}
`
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir()}
	_, rows, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Workload struct {
			Endpoints []string `json:"endpoints"`
		} `json:"workload"`
	}
	b, err := os.ReadFile(filepath.Join(rows[0].Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &m)
	if len(m.Workload.Endpoints) != 1 || !strings.Contains(m.Workload.Endpoints[0], "n2") || rows[0].Summary.TPS <= 0 {
		t.Errorf("endpoints %v, TPS %v", m.Workload.Endpoints, rows[0].Summary.TPS)
	}
}

// TestLinksSamePathControlOnServers: a links sweep (none, 0.6ms) on a MariaDB single
// primary and a 2-node async with the userspace link: the async none cell runs through
// the link at zero delay (its manifest records the link, sweep.json the link's cost), the
// single primary runs once (its 0.6ms cell reuses it), and comparison.md and report.md
// say so with the cost next to the numbers.
func TestLinksSamePathControlOnServers(t *testing.T) {
	testmachine.Alone(t) // it measures a link's cost: nothing else may load the machine
	testenv.Installation(t, topology.MariaDB)
	prereq.Need(t, cluster.NetNamespacesUsable())
	if !userspaceLinks() {
		t.Skip("kernel netem is available: the links go through the plain bridge path, not the userspace link this test is about")
	}
	sb := testenv.Store(t)
	single, async := testenv.Name(t, "swls"), testenv.Name(t, "swla")
	y := `name: swlinks
network: netns
topologies:
  - {name: ` + single + `, kind: single, flavor: mariadb}
  - {name: ` + async + `, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 500, threads: 2, time: 2}
sweep:
  links: [none, 0.6ms]
`
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := &ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir()}
	dir, _, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.ReadSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Cells {
		switch {
		case c.Topology == single && c.Axes["links"] == "0.6ms":
			if c.Status != schema.StatusReused || c.ReusedFrom != 1 || c.Dir != "" {
				t.Errorf("single 0.6ms cell %+v: want reused from cell 1, not run", c)
			}
		case c.Topology == async && c.Axes["links"] == "none":
			if c.LinksControl == "" || c.LinkAddedMs == nil || *c.LinkAddedMs < -1 || *c.LinkAddedMs > 5 {
				t.Errorf("async none cell: control %q, added %v", c.LinksControl, c.LinkAddedMs)
			}
			b, _ := os.ReadFile(filepath.Join(dir, c.Dir, "manifest.json"))
			if !strings.Contains(string(b), `"backend": "userspace"`) {
				t.Errorf("async none cell did not go through the userspace link:\n%s", b)
			}
		default:
			if c.Status != schema.StatusDone || c.LinksControl != "" {
				t.Errorf("cell %d %+v", c.Index, c)
			}
		}
	}
	for _, name := range []string{"comparison.md", "report.md"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		// comparison.md gives the cost in a footnote ("the link's own cost (...): async
		// +0.024 ms"), report.md next to the cell ("its cost +0.024 ms round trip").
		cost := strings.Contains(string(b), "its cost ") || regexp.MustCompile(`the link's own cost \(the round trip it added to the plain bridge\): \S+ [+-][0-9.]+ ms`).Match(b)
		if !strings.Contains(string(b), "same path: the userspace link at zero delay") || !cost || !strings.Contains(string(b), "not run") {
			t.Errorf("%s does not name the same-path control and its cost, or the reused cell:\n%s", name, b)
		}
		if name == "comparison.md" {
			t.Logf("comparison.md:\n%s", b)
		}
	}
}
