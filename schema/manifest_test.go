package schema

import "testing"

// TestManifestRoundTrip: every manifest.json in the repository's results testdata (runs
// written by habench since November, before Manifest moved here from experiment)
// decodes into Manifest with no unknown key and encodes back with every key and value it
// had (keys a newer habench always writes may be added).
func TestManifestRoundTrip(t *testing.T) {
	files := testdataFiles(t, ManifestFile, 10)
	for _, p := range files {
		roundTrip(t, p, &Manifest{})
	}
	t.Logf("%d manifest.json files round-trip", len(files))
}
