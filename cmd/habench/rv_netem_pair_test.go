package main

import (
	"strings"
	"testing"
)

// --pair given twice for one pair is an error like --node and --link given twice, and
// the "nothing to apply" message names the site flags too; --away NODE=IMPAIRMENT (issue
// 31) is parsed like --node.
func TestRvNetemApplyPairFlags(t *testing.T) {
	o := &netemApplyOpts{pairs: []string{"dc1-dc2=5ms", "dc1-dc2=3ms"}}
	if _, err := o.request(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("--pair dc1-dc2 twice: %v, want an error saying given twice", err)
	}
	o = &netemApplyOpts{}
	if _, err := o.request(); err == nil || !strings.Contains(err.Error(), "--inter") {
		t.Errorf("nothing to apply: %v, want the message to name --intra, --inter and --pair", err)
	}
	o = &netemApplyOpts{intra: "0.1ms", inter: "5ms", pairs: []string{"dc1-dc3=20ms"}}
	r, err := o.request()
	if err != nil || r.String() != "--intra 0.1ms --inter 5ms --pair dc1-dc3=20ms" {
		t.Errorf("request %q, %v", r.String(), err)
	}
	o = &netemApplyOpts{all: "0.1ms", away: []string{"n3=0.6ms"}}
	if r, err := o.request(); err != nil || r.String() != "--all 0.1ms --away n3=0.6ms" {
		t.Errorf("--away: request %q, %v", r.String(), err)
	}
	for _, bad := range [][]string{{"n3"}, {"n3=1ms", "n3=2ms"}} {
		if _, err := (&netemApplyOpts{away: bad}).request(); err == nil || !strings.Contains(err.Error(), "--away") {
			t.Errorf("--away %q: %v, want an error naming --away", bad, err)
		}
	}
}
