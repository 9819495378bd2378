package sampler

import (
	"testing"

	"github.com/habench/habench/topology"
)

// Every sampler a registered kind names exists, so Default never drops one silently.
func TestKindSamplersKnown(t *testing.T) {
	for _, k := range topology.Kinds() {
		for _, name := range topology.KindOf(k).Samplers {
			if !Known(name) {
				t.Errorf("kind %s names sampler %q: not registered", k, name)
			}
		}
		if len(Default(k)) == 0 {
			t.Errorf("kind %s: no samplers", k)
		}
	}
	if got := Default(topology.Galera); len(got) != 3 || got[1].Name() != "galera" {
		t.Errorf("Default(galera) = %d samplers: want heartbeat, galera, host", len(got))
	}
}
