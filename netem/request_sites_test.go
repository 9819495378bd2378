package netem

import (
	"strings"
	"testing"
	"time"
)

func TestRequestBySite(t *testing.T) {
	sites := []Site{{"dc1", []string{"n1", "n2"}}, {"dc2", []string{"n3", "n4"}}, {"dc3", []string{"arb"}}}
	nodes := []string{"n1", "n2", "n3", "n4", "arb"}
	r := Request{Intra: "0.1ms", Inter: "5ms", Pair: map[string]string{"dc1-dc3": "20ms"}}
	s, err := r.WithSites(sites).Build(nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		want time.Duration
	}{{"n1", "n2", 100 * time.Microsecond}, {"n3", "n4", 100 * time.Microsecond}, {"n1", "n3", 5 * time.Millisecond},
		{"n4", "n2", 5 * time.Millisecond}, {"n3", "arb", 5 * time.Millisecond}, {"n1", "arb", 20 * time.Millisecond}, {"arb", "n2", 20 * time.Millisecond}} {
		if got := s.Get(c.a, c.b).Delay; got != c.want {
			t.Errorf("%s->%s delay %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if got := r.String(); !strings.Contains(got, "--inter 5ms") || !strings.Contains(got, "--pair dc1-dc3=20ms") {
		t.Errorf("String() = %q", got)
	}
	if _, err := r.Build(nodes); err == nil || !strings.Contains(err.Error(), "no sites") {
		t.Errorf("without sites: %v, want an error saying the topology has no sites", err)
	}
	if _, err := (Request{Pair: map[string]string{"dc1-dc9": "1ms"}}).WithSites(sites).Build(nodes); err == nil || !strings.Contains(err.Error(), "dc1-dc9") {
		t.Errorf("unknown site pair: %v", err)
	}
	// A site cut off (Sites.CutOff's form): links inside the site stay.
	s, err = Request{Groups: "dc2: [n3,n4], others: [n1,n2,arb]; inter partition"}.Build(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Partitioned("n3", "n1") || !s.Partitioned("arb", "n4") || s.Partitioned("n3", "n4") || s.Partitioned("n1", "arb") {
		t.Error("site partition: want dc2 cut off from the others and nothing else")
	}
}

// TestPairNamesTheBadSide: a refused pair names the side that is wrong and what there is.
func TestPairNamesTheBadSide(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	sites := []Site{{"dc1", []string{"n1", "n2"}}, {"dc2", []string{"n3"}}}
	for _, c := range []struct {
		pair  string
		sites []Site
		want  string
	}{
		{"n1-n9", nil, `pair "n1-n9": the topology has no node n9 (it has n1, n2, n3)`},
		{"n9-n1", sites, `pair "n9-n1": the topology has no node n9 (it has n1, n2, n3)`},
		{"dc1-dc9", sites, `pair "dc1-dc9": the topology has no site dc9 (it has dc1, dc2)`},
		{"dc1-dc9", nil, `pair "dc1-dc9": the topology has no site dc1: it has no sites`},
		{"n1-n2", nil, `pair "n1-n2": n1 is a node, not a site`},
		{"dc1-n3", sites, `pair "dc1-n3": n3 is a node, not a site: a pair is SITE-SITE of the topology's sites (dc1, dc2)`},
		{"dc1-dc1", sites, `pair "dc1-dc1": both sides are dc1`},
		{"dc1", sites, `pair "dc1": want SITE-SITE`},
	} {
		_, err := (Request{Pair: map[string]string{c.pair: "1ms"}}).WithSites(c.sites).Build(nodes)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("pair %s: %v, want %q", c.pair, err, c.want)
		}
	}
}
