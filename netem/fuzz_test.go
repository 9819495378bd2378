package netem

import "testing"

// FuzzParseImpairment: no impairment string panics the parser or the request builder.
// Run: go test -run '^$' -fuzz FuzzParseImpairment -fuzztime 5m ./netem/
func FuzzParseImpairment(f *testing.F) {
	for _, s := range []string{"0.6ms", "delay 5ms jitter 1ms distribution normal loss 0.1% rate 100mbit", "partition",
		"delay 1s loss 100%", "rate 1kbit", "loss 1", "jitter 1ms", ""} {
		f.Add(s, "dc1: [n1,n2], dc2: [n3]; intra 0.1ms, inter 5ms")
	}
	f.Fuzz(func(t *testing.T, imp, groups string) {
		_, _ = ParseImpairment(imp)
		r := Request{All: imp, Groups: groups, Link: map[string]string{"n1->n3": imp}, Node: map[string]string{"n2": imp}}
		if sp, err := r.Build([]string{"n1", "n2", "n3"}); err == nil && sp == nil {
			t.Fatal("nil spec without an error")
		}
	})
}
