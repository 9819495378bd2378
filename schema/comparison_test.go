package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestComparisonRoundTrip: every comparison.json in the repository's testdata (written
// by habench through experiment.Row, before the type moved here) decodes into
// ComparisonRow with no unknown key and encodes back with every key and value it had
// (keys a newer habench always writes, in the summaries, may be added).
func TestComparisonRoundTrip(t *testing.T) {
	var files []string
	for _, root := range []string{"../report/testdata", "../experiment/testdata"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == ComparisonName {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < 2 {
		t.Fatalf("found %d comparison.json files in testdata, want at least 2", len(files))
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var rows []ComparisonRow
		if err := dec.Decode(&rows); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(rows) == 0 || rows[0].Summary == nil {
			t.Errorf("%s: %d rows, first without its summary", p, len(rows))
			continue
		}
		out, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var was, now any
		if err := json.Unmarshal(b, &was); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &now); err != nil {
			t.Fatal(err)
		}
		if d := lost(was, now, ""); d != "" {
			t.Errorf("%s: does not round-trip: %s", p, d)
		}
	}
}
