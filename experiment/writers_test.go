package experiment

import (
	"github.com/habench/habench/schema"
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

func TestMultiWriterIgnore(t *testing.T) {
	def := func() workload.Options {
		o := workload.DefaultOptions()
		return o
	}
	o := def()
	note := multiWriterIgnore(topology.Group, 2, &o)
	if want := []uint16{1213, 1020, 1205, 3101, 1180}; !slices.Equal(o.IgnoreErrors, want) || !strings.Contains(note, "1213,1020,1205,3101,1180") {
		t.Errorf("two writers on a group: ignore %v, note %q; want %v and a note naming them", o.IgnoreErrors, note, want)
	}
	o = def()
	note = multiWriterIgnore(topology.Galera, 3, &o)
	if want := []uint16{1213, 1020, 1205, 1047, 1180}; !slices.Equal(o.IgnoreErrors, want) || !strings.Contains(note, "1213,1020,1205,1047,1180") || !strings.Contains(note, "Galera") {
		t.Errorf("three writers on Galera: ignore %v, note %q; want %v and a note naming them", o.IgnoreErrors, note, want)
	}
	if !slices.Equal(workload.DefaultIgnoreErrors, []uint16{1213, 1020, 1205}) {
		t.Errorf("the default list was modified: %v", workload.DefaultIgnoreErrors)
	}
	for _, c := range []struct {
		kind    topology.Kind
		writers int
		ignore  []uint16
	}{
		{topology.Group, 1, workload.DefaultIgnoreErrors},
		{topology.Galera, 1, workload.DefaultIgnoreErrors},
		{topology.Galera, 3, []uint16{1213}},
		{topology.Async, 2, workload.DefaultIgnoreErrors},
		{topology.Group, 3, []uint16{1213}},
	} {
		o := def()
		o.IgnoreErrors = slices.Clone(c.ignore)
		if note := multiWriterIgnore(c.kind, c.writers, &o); note != "" || !slices.Equal(o.IgnoreErrors, c.ignore) {
			t.Errorf("%s, %d writers, ignore %v: changed to %v (note %q); want unchanged", c.kind, c.writers, c.ignore, o.IgnoreErrors, note)
		}
	}
}

func TestMaxReplicaLagCountsEveryNode(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	galera := &schema.Summary{Nodes: []schema.NodeLag{{Node: "n1", Role: "node", LagMaxS: f(0)}, {Node: "n2", Role: "node", LagMaxS: f(0.4)}, {Node: "n3", Role: "node", LagMaxS: f(0.2)}}}
	if m, u := maxReplicaLag(galera); m == nil || *m != 0.4 || u != "" {
		t.Errorf("galera: max lag %v %q, want 0.4 (n2)", m, u)
	}
	// The first source, stale after a promote (the heartbeat writer moved), counts: the
	// comparison once showed 0.000 while the node table had the old primary at 7.8 s.
	async := &schema.Summary{Nodes: []schema.NodeLag{{Node: "n1", Role: "source", LagMaxS: f(7.8), LagUnknownS: 22}, {Node: "n2", Role: "replica", LagMaxS: f(0.1)}, {Node: "n3", Role: "replica"}}}
	if m, u := maxReplicaLag(async); m == nil || *m != 7.8 || u != "n1 unknown for 22 s" {
		t.Errorf("async: max lag %v %q, want 7.8 and n1 unknown for 22 s", m, u)
	}
	if m, u := maxReplicaLag(&schema.Summary{Nodes: []schema.NodeLag{{Node: "n1", Role: "source", LagMaxS: f(0)}}}); m != nil || u != "" {
		t.Errorf("single: max lag %v %q, want nil", *m, u)
	}
}
