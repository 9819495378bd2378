package main

import (
	"github.com/habench/habench/internal/testmachine"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
)

// linkAchieved returns the achieved median round trip (ms) of link "a->b" in a netem
// apply/show table, and whether the probes measured it cut: every probe failed (the
// "N of N probes failed" of a partitioned line, or no achieved median at all). The word
// "partition" on the line is the request's, not a measurement, and decides nothing.
func linkAchieved(t *testing.T, out, link string) (ms float64, cut bool) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(link) + `\s+(.*)$`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no line for %s in:\n%s", link, out)
	}
	if p := probesFailed.FindStringSubmatch(m[1]); p != nil {
		failed, _ := strconv.Atoi(p[1])
		total, _ := strconv.Atoi(p[2])
		return 0, total > 0 && failed == total
	}
	f := strings.Fields(m[1])
	// IMPAIRMENT may be several words: the last five columns are numbers.
	if len(f) < 5 {
		t.Fatalf("%s: %q", link, m[1])
	}
	v, err := strconv.ParseFloat(f[len(f)-3], 64)
	if err != nil {
		t.Fatalf("%s: %q", link, m[1])
	}
	return v, v <= 0
}

// probesFailed is a partitioned line's measurement: "3 of 3 probes failed".
var probesFailed = regexp.MustCompile(`(\d+) of (\d+) probes failed`)

// TestSitesLinksAndPartition: an async MariaDB sandbox in two sites (dc1: n1, n2; dc2:
// n3) from a topology file. `netem apply --intra 0.2ms --inter 3ms` delays the links
// inside dc1 by 0.4 ms and the links between the sites by 6 ms round trip (measured);
// `status` lists the nodes by site; `fault partition dc2` cuts n3 off from n1 and n2 and
// `fault heal dc2` removes it, after which n3 replicates again.
func TestSitesLinksAndPartition(t *testing.T) {
	testmachine.Alone(t) // it measures round trips or timing: nothing else may load the machine
	testenv.Installation(t, topology.MariaDB)
	prereq.Need(t, cluster.NetNamespacesUsable())
	prereq.NeedErr(t, "userspace link unusable here", netem.UserspaceAvailable())
	state := stateDir(t)
	name := testenv.Name(t, "sts")
	file := filepath.Join(t.TempDir(), "ts.yaml")
	os.WriteFile(file, []byte("name: "+name+"\nkind: async\nnodes: 3\nflavor: mariadb\nsites: {dc2: [n3], dc1: [n1, n2]}\n"), 0o644)
	if r := habench(t, state, "deploy", "-f", file, "--network", "netns"); r.code != 0 {
		t.Fatalf("deploy: %d %s", r.code, r.stderr)
	}
	r := habench(t, state, "status", name)
	if r.code != 0 || !regexp.MustCompile(`(?m)^SITE\s+NODE`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^dc2\s+n3\s`).MatchString(r.stdout) {
		t.Fatalf("status: want a SITE column with n3 in dc2:\n%s%s", r.stdout, r.stderr)
	}
	if i, j := strings.Index(r.stdout, "dc2 "), strings.Index(r.stdout, "dc1 "); i < 0 || j < 0 || i > j {
		t.Errorf("status: want the nodes in the sites' order (dc2 first):\n%s", r.stdout)
	}
	r = habench(t, state, "netem", "apply", "--cluster", name, "--intra", "0.2ms", "--inter", "3ms")
	if r.code != 0 {
		t.Fatalf("netem apply: %d %s", r.code, r.stderr)
	}
	t.Logf("netem apply:\n%s", r.stdout)
	intra, _ := linkAchieved(t, r.stdout, "n1->n2")
	inter, _ := linkAchieved(t, r.stdout, "n1->n3")
	inter2, _ := linkAchieved(t, r.stdout, "n3->n2")
	if intra < 0.3 || intra > 2.5 || inter < 5.5 || inter > 9 || inter2 < 5.5 || inter2 > 9 {
		t.Errorf("achieved RTT n1->n2 %.3f ms (want ~0.4), n1->n3 %.3f and n3->n2 %.3f ms (want ~6)", intra, inter, inter2)
	}
	if r := habench(t, state, "netem", "clear", name); r.code != 0 {
		t.Fatalf("netem clear: %s", r.stderr)
	}
	if r := habench(t, state, "fault", "kill", "dc2", "--cluster", name); r.code != 2 || !strings.Contains(r.stderr, "site") {
		t.Errorf("fault kill dc2: exit %d %q, want a usage error saying a site can only be partitioned", r.code, r.stderr)
	}
	if r := habench(t, state, "fault", "partition", "dc2", "--cluster", name); r.code != 0 {
		t.Fatalf("fault partition dc2: %d %s", r.code, r.stderr)
	}
	r = habench(t, state, "netem", "show", name, "--measure")
	t.Logf("netem show:\n%s", r.stdout)
	for _, l := range []string{"n1->n3", "n3->n2"} {
		if _, cut := linkAchieved(t, r.stdout, l); !cut {
			t.Errorf("%s: probes got through after fault partition dc2", l)
		}
	}
	if ms, cut := linkAchieved(t, r.stdout, "n2->n1"); cut || ms <= 0 {
		t.Errorf("n2->n1 cut (achieved %.3f ms): a site partition must leave the links among the others", ms)
	}
	if strings.Contains(r.stdout, "probes got through") || strings.Contains(r.stdout, "no probe got through") {
		t.Errorf("netem show warns of a cut that does not hold or a link that does not answer:\n%s", r.stdout)
	}
	if r := habench(t, state, "fault", "heal", "dc2", "--cluster", name); r.code != 0 {
		t.Fatalf("fault heal dc2: %d %s", r.code, r.stderr)
	}
	if r := habench(t, state, "sysbench", "oltp_write_only", "prepare", "--cluster", name, "--tables", "1", "--table-size", "100"); r.code != 0 {
		t.Fatalf("prepare after heal: %s", r.stderr)
	}
	r = habench(t, state, "status", name)
	if !regexp.MustCompile(`(?m)^dc2\s+n3\s.*io=Yes sql=Yes`).MatchString(r.stdout) {
		t.Errorf("n3 not replicating after the heal:\n%s", r.stdout)
	}
	if r := habench(t, state, "destroy", name); r.code != 0 {
		t.Errorf("destroy: %s", r.stderr)
	}
	noClusters(t, state, name)
}
