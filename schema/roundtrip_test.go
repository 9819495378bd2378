package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// testdataFiles are the files named name in the repository's results testdata (runs
// written by habench); fewer than least fails t.
func testdataFiles(t *testing.T, name string, least int) []string {
	t.Helper()
	var files []string
	for _, root := range []string{"../report/testdata", "../experiment/testdata"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == name {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < least {
		t.Fatalf("found %d %s files in testdata, want at least %d", len(files), name, least)
	}
	return files
}

// roundTrip decodes file p into v with no unknown key, encodes v again and reports in t
// any key or value of the file the encoding lost (lost). It returns the file's bytes and
// the encoding (indented as habench writes its files), nil when p did not decode.
func roundTrip(t *testing.T, p string, v any) (file, out []byte) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: %v", p, err)
		return b, nil
	}
	if out, err = json.MarshalIndent(v, "", "  "); err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
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
	return b, out
}
