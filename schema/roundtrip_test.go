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

// TestSummaryReplication: a run's replication figures are the largest over its nodes:
// mean and largest lag, backlog (a Galera node's receive queue too, when sampled), and
// flow control paused (Galera) or throttled (group, over the window).
func TestSummaryReplication(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := Summary{TimeS: 10,
		Nodes:  []NodeLag{{Node: "n1", LagAvgS: f(0), LagMaxS: f(0)}, {Node: "n2", LagAvgS: f(0.3), LagMaxS: f(1.2), BacklogMaxTrx: f(4)}},
		Galera: []GaleraNodeSummary{{Node: "n2", PausedAvg: 0.02, RecvQueueMax: 9, Samples: 10}, {Node: "n3", PausedAvg: 0.05, RecvQueueMax: 50}},
		Group:  []GroupMemberSummary{{Node: "n1", ThrottleTimeS: f(0.4)}}}
	r := s.Replication()
	if r.LagAvgS == nil || *r.LagAvgS != 0.3 || *r.LagMaxS != 1.2 || *r.BacklogMax != 9 || *r.FCPaused != 0.05 {
		t.Errorf("replication %v %v %v %v: want 0.3, 1.2, 9 (n3's queue was not sampled), 0.05", *r.LagAvgS, *r.LagMaxS, *r.BacklogMax, *r.FCPaused)
	}
	if r := (&Summary{}).Replication(); r.LagAvgS != nil || r.LagMaxS != nil || r.BacklogMax != nil || r.FCPaused != nil {
		t.Errorf("a single node's figures: %+v, want none", r)
	}
}
