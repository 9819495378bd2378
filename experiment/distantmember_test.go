package experiment

import (
	"os"
	"testing"
	"time"

	"github.com/habench/habench/scenario"
)

// TestDistantMemberScenario: scenarios/distant-member.yaml parses and plans at every
// scale; each of its three topologies (Galera, group, semi-sync waiting for one replica)
// runs with every link 0.1 ms one-way and with n3 10 ms away both ways, n1<->n2 staying
// at 0.1 ms (requested round trips 0.2 ms and 20 ms: away overrides all).
func TestDistantMemberScenario(t *testing.T) {
	b, err := os.ReadFile("../scenarios/distant-member.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.ParseScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(scenario.ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 6 {
		t.Fatalf("%d cells, want 3 topologies x 2 links", len(p.Cells))
	}
	kinds := map[string]bool{}
	for _, tp := range s.Topologies {
		kinds[string(tp.Kind)] = true
	}
	for i, c := range p.Cells {
		spec, err := c.Links.Build([]string{"n1", "n2", "n3"})
		if err != nil {
			t.Fatalf("cell %d links %v: %v", i+1, c.Links, err)
		}
		far := 100 * time.Microsecond
		if i%2 == 1 {
			far = 10 * time.Millisecond
		}
		for _, l := range [][2]string{{"n1", "n2"}, {"n2", "n1"}} {
			if d := spec.Get(l[0], l[1]).Delay; d != 100*time.Microsecond {
				t.Errorf("cell %d: %s->%s delay %v, want 0.1ms", i+1, l[0], l[1], d)
			}
		}
		for _, l := range [][2]string{{"n1", "n3"}, {"n3", "n1"}, {"n2", "n3"}, {"n3", "n2"}} {
			if d := spec.Get(l[0], l[1]).Delay; d != far {
				t.Errorf("cell %d: %s->%s delay %v, want %v", i+1, l[0], l[1], d, far)
			}
		}
	}
	if len(kinds) != 3 || !kinds["galera"] || !kinds["group"] || !kinds["semisync"] {
		t.Errorf("kinds %v, want galera, group and semisync", kinds)
	}
}
