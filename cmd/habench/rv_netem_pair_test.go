package main

import (
	"strings"
	"testing"
)

// --pair given twice for one pair is an error like --node and --link given twice, and
// the "nothing to apply" message names the site flags too.
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
}
