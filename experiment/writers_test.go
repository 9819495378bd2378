package experiment

import (
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
	if !slices.Equal(workload.DefaultIgnoreErrors, []uint16{1213, 1020, 1205}) {
		t.Errorf("the default list was modified: %v", workload.DefaultIgnoreErrors)
	}
	for _, c := range []struct {
		kind    topology.Kind
		writers int
		ignore  []uint16
	}{
		{topology.Group, 1, workload.DefaultIgnoreErrors},
		{topology.Galera, 3, workload.DefaultIgnoreErrors},
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
