package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSummarySchemaUnchanged: summary.json written through these types has the same
// keys, order and omitempty as before the types moved here from experiment/. The golden
// files were encoded by experiment.Summary at commit bdd01a1 (before the move), with the
// fields added since (faults[].detail, probe.unknown, probe.history, checks.follows_writer, writer_moves[].settled_s, faults[].view_change_s, client_failover_s, failover_workers, client_down_s, faults[].proxy, proxy, probe.via, probe.stale_commits, probe.stale, faults[].proxy.stale_commits and stale_on, clients) encoded by these types, from the same three values: every field set (fill), all zero, and every section present but
// empty (shells).
func TestSummarySchemaUnchanged(t *testing.T) {
	var full, sh Summary
	fill(reflect.ValueOf(&full).Elem())
	shells(reflect.ValueOf(&sh).Elem())
	for name, v := range map[string]*Summary{"summary_full.json": &full, "summary_zero.json": {}, "summary_shells.json": &sh} {
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

// TestSummaryRoundTrip: every summary.json in the repository's results testdata (runs
// written by habench) decodes into Summary with no unknown key and encodes back with
// every key and value it had (field for field; keys a newer habench always writes, such
// as semisync.degraded, may be added), and in most files to the very same bytes.
func TestSummaryRoundTrip(t *testing.T) {
	files := testdataFiles(t, SummaryFile, 10)
	same := 0
	for _, p := range files {
		if b, out := roundTrip(t, p, &Summary{}); bytes.Equal(out, b) {
			same++
		}
	}
	if same < len(files)/2 {
		t.Errorf("only %d of %d summary.json files round-trip byte for byte", same, len(files))
	}
	t.Logf("%d summary.json files round-trip, %d byte for byte", len(files), same)
}

// lost is the first key or value of was that now lacks or has another value ("" when
// none), at path.
func lost(was, now any, path string) string {
	switch w := was.(type) {
	case map[string]any:
		n, ok := now.(map[string]any)
		if !ok {
			return path + ": not an object"
		}
		for k, v := range w {
			nv, ok := n[k]
			if !ok {
				return path + "." + k + ": key dropped"
			}
			if d := lost(v, nv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		n, ok := now.([]any)
		if !ok || len(n) != len(w) {
			return path + ": array changed"
		}
		for i := range w {
			if d := lost(w[i], n[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(was, now) {
		return fmt.Sprintf("%s: %v became %v", path, was, now)
	}
	return ""
}

// TestManifestHostsSchemaUnchanged: manifest.json's hosts and drop_caches written through
// HostInfo and CacheDrop have the keys and omitempty of experiment.HostInfo and
// report.CacheDrop before they moved here (golden files from commit bdd01a1).
func TestManifestHostsSchemaUnchanged(t *testing.T) {
	type man struct {
		Hosts      []HostInfo  `json:"hosts"`
		CacheDrops []CacheDrop `json:"drop_caches"`
	}
	var full man
	fill(reflect.ValueOf(&full).Elem())
	zero := man{Hosts: []HostInfo{{}}, CacheDrops: []CacheDrop{{}}}
	for name, v := range map[string]*man{"manifest_hosts_full.json": &full, "manifest_hosts_zero.json": &zero} {
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
