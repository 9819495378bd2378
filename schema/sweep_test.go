package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSweepSchemaUnchanged: sweep.json written through these types has the same keys,
// order and omitempty as before the types moved here from experiment/. The golden files
// were encoded by experiment.SweepFile at commit c581123 (before the move) from the same
// three values: every field set (fill), all zero, every section present but empty (shells);
// sweep_full.json gained lines since, the additive keys "links" (SweepFile.Links) and
// checker_valid, checker_ok, checker_error, anomaly_types, read_checks,
// stale_reads, error_log, capacity (CellRecord), order (CellPolicy) and lag_avg_s, lag_max_s, backlog_max_trx, fc_paused, capacity_rate, failover_s (cell_summaries).
func TestSweepSchemaUnchanged(t *testing.T) {
	var full, sh SweepFile
	fill(reflect.ValueOf(&full).Elem())
	shells(reflect.ValueOf(&sh).Elem())
	for name, v := range map[string]*SweepFile{"sweep_full.json": &full, "sweep_zero.json": {}, "sweep_shells.json": &sh} {
		want, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, '\n'); !bytes.Equal(got, want) {
			t.Errorf("%s: encoding changed:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

// TestSweepRoundTrip: every sweep.json in the repository's testdata (sweeps written by
// habench) reads with ReadSweep, has no key SweepFile does not declare, and encodes back
// to the very same bytes.
func TestSweepRoundTrip(t *testing.T) {
	var dirs []string
	for _, root := range []string{"../report/testdata", "../experiment/testdata"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == SweepName {
				dirs = append(dirs, filepath.Dir(p))
			}
			return nil
		})
	}
	if len(dirs) == 0 {
		t.Fatal("no sweep.json in testdata")
	}
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, SweepName))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var strict SweepFile
		if err := dec.Decode(&strict); err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		f, err := ReadSweep(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Cells) == 0 || len(f.Axes) == 0 || f.Cells[0].Status == "" {
			t.Errorf("%s: read %d cells, %d axes, first status %q", dir, len(f.Cells), len(f.Axes), f.Cells[0].Status)
		}
		out, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if out = append(out, '\n'); !bytes.Equal(out, b) {
			t.Errorf("%s: sweep.json does not round-trip byte for byte:\n%s", dir, out)
		}
	}
}

// TestReadSweepErrors: a missing sweep.json is fs.ErrNotExist (--resume tells a fresh
// directory by it); a malformed one names the file.
func TestReadSweepErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadSweep(dir); !os.IsNotExist(err) {
		t.Errorf("missing sweep.json: %v, want a not-exist error", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SweepName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSweep(dir); err == nil || !bytes.Contains([]byte(err.Error()), []byte(filepath.Join(dir, SweepName))) {
		t.Errorf("malformed sweep.json: %v, want an error naming the file", err)
	}
}
