package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseScenario: no scenario file, however malformed, panics the parser; the shipped
// scenarios are the seed corpus. Run: go test -run '^$' -fuzz FuzzParseScenario -fuzztime 5m ./experiment/
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob("../scenarios/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\ntopologies: [{name: a, kind: single}]\nworkload: {test: oltp_read_write}\n"))
	f.Add([]byte("sweep: {threads: [1, 2], links: [none, 0.6ms]}\n"))
	f.Add([]byte("name: x\nworkload: {test: caf\xff}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseScenario(b)
		if err == nil && s == nil {
			t.Fatal("nil scenario without an error")
		}
	})
}
