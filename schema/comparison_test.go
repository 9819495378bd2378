package schema

import "testing"

// TestComparisonRoundTrip: every comparison.json in the repository's testdata (written
// by habench through experiment.Row, before the type moved here) decodes into
// ComparisonRow with no unknown key and encodes back with every key and value it had
// (keys a newer habench always writes, in the summaries, may be added).
func TestComparisonRoundTrip(t *testing.T) {
	for _, p := range testdataFiles(t, ComparisonName, 2) {
		var rows []ComparisonRow
		if _, out := roundTrip(t, p, &rows); out != nil && (len(rows) == 0 || rows[0].Summary == nil) {
			t.Errorf("%s: %d rows, first without its summary", p, len(rows))
		}
	}
}
