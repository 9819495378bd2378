package checker

import (
	"io"
	"math/rand/v2"
	"testing"

	"github.com/habench/habench/history"
)

// history100k is a register history of 100,000 committed read-then-writes on 8 keys
// whose reads lag behind the writes as concurrent sessions' do (some lost updates).
func history100k() []history.Op {
	rng := rand.New(rand.NewPCG(1, 2))
	last := make([]int64, 9)
	ops := make([]history.Op, 100_000)
	for i := range ops {
		k := int64(1 + rng.IntN(8))
		read := max(last[k]-int64(rng.IntN(2)), 0)
		last[k]++
		ops[i] = history.Op{Process: i % 16, Session: i % 16, Node: "n1", Start: int64(i) * 1000, End: int64(i)*1000 + 900,
			Outcome: history.OK, Value: []history.Mop{history.R(k, read), history.W(k, last[k])}}
	}
	return history.Sorted(ops)
}

// BenchmarkCheckRegister100k: the register checks over 100,000 operations (issue 20's
// budget: under 10 s and 500 MB).
func BenchmarkCheckRegister100k(b *testing.B) {
	ops := history100k()
	b.ReportAllocs()
	for b.Loop() {
		if v := CheckRegister(ops); v.Valid {
			b.Fatal("no lost update in a history built with some")
		}
	}
}

// BenchmarkExportEDN100k: writing the EDN history of 100,000 operations.
func BenchmarkExportEDN100k(b *testing.B) {
	ops := history100k()
	b.ReportAllocs()
	for b.Loop() {
		if err := history.WriteEDN(io.Discard, ops); err != nil {
			b.Fatal(err)
		}
	}
}
