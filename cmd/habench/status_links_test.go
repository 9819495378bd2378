package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
)

// TestPrintLinkState: status's links line for each link state: an unreadable record, a
// standing impairment in effect, being applied, or whose link process is gone, a run's own
// links, none on a cluster that can have them, and nothing on one that cannot.
func TestPrintLinkState(t *testing.T) {
	st := &links.Standing{Request: netem.Request{All: "5ms"}, Backend: netem.BackendUserspace}
	for _, c := range []struct {
		ls   links.State
		want string
	}{
		{links.State{Err: errors.New("bad json"), Standing: st}, "links: unreadable record (bad json): habench netem clear c1\n"},
		{links.State{Standing: st, Alive: true}, "links: --all 5ms (userspace backend, in effect; habench netem show c1)\n"},
		{links.State{Standing: st, Applying: true}, "links: --all 5ms (userspace backend, netem apply in progress; habench netem show c1)\n"},
		{links.State{Standing: st}, "links: --all 5ms (userspace backend, NOT in effect, link process gone: habench netem clear c1; habench netem show c1)\n"},
		{links.State{RunActive: true, Impairable: true}, "links: impaired by a run with --links in progress\n"},
		{links.State{Impairable: true}, "links: no impairments\n"},
		{links.State{}, ""},
	} {
		var b strings.Builder
		printLinkState(&b, "c1", c.ls)
		if b.String() != c.want {
			t.Errorf("%+v: %q, want %q", c.ls, b.String(), c.want)
		}
	}
}
