package proxy

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/topology"
)

func TestRuleOf(t *testing.T) {
	for k, want := range map[topology.Kind]topology.Kind{
		topology.Galera: topology.Galera, topology.GaleraArbitrator: topology.Galera,
		topology.Group: topology.Group, topology.GroupDR: topology.Group,
		topology.Async: "", topology.SemiSync: "", topology.Single: "",
	} {
		if got := ruleOf(k).kind; got != want {
			t.Errorf("ruleOf(%s) is %q's rule, want %q's", k, got, want)
		}
	}
}

// TestRules judges states the servers report, one kind's rule at a time.
func TestRules(t *testing.T) {
	synced := state{WsrepState: 4, ClusterStatus: "Primary"}
	online := func(role string, on, all int) state {
		return state{MemberState: "ONLINE", MemberRole: role, Online: on, Members: all}
	}
	for _, tc := range []struct {
		name   string
		f      func(state, string) (bool, string)
		s      state
		mode   string
		ok     bool
		reason string
	}{
		{"galera synced", galeraOK, synced, "", true, "Synced"},
		{"galera donor", galeraOK, state{WsrepState: 2, ClusterStatus: "Primary"}, "", false, "wsrep_local_state 2"},
		{"galera non-primary", galeraOK, state{WsrepState: 4, ClusterStatus: "non-Primary"}, "", false, "not Primary"},
		{"galera read_only", galeraOK, state{WsrepState: 4, ClusterStatus: "Primary", ReadOnly: true}, "", false, "read_only"},
		{"group primary", groupWriter, online("PRIMARY", 3, 3), "", true, "PRIMARY"},
		{"group secondary writer", groupWriter, online("SECONDARY", 3, 3), "", false, "not PRIMARY"},
		{"group multi-primary", groupWriter, online("PRIMARY", 2, 3), topology.GroupMultiPrimary, true, "2 of 3"},
		{"group minority primary", groupWriter, online("PRIMARY", 1, 3), "", false, "without a majority"},
		{"group half", groupReader, online("SECONDARY", 2, 4), "", false, "without a majority"},
		{"group recovering", groupReader, state{MemberState: "RECOVERING", Online: 2, Members: 3}, "", false, "RECOVERING"},
		{"group not a member", groupReader, state{}, "", false, "not a member"},
		{"group secondary reader", groupReader, online("SECONDARY", 2, 3), "", true, "ONLINE"},
		{"source", replicationWriter, state{}, "", true, "writable"},
		{"replica writer", replicationWriter, state{ReadOnly: true, SuperReadOnly: true}, "", false, "super_read_only"},
		{"replica read_only", replicationWriter, state{ReadOnly: true}, "", false, "read_only"},
		{"replica reader", replicationReader, state{Replica: true, SQLRunning: true}, "", true, "running"},
		{"replica stopped", replicationReader, state{Replica: true}, "", false, "not running"},
		{"source reader", replicationReader, state{}, "", false, "not a replica"},
	} {
		ok, why := tc.f(tc.s, tc.mode)
		if ok != tc.ok || !strings.Contains(why, tc.reason) || strings.Contains(why, "\n") {
			t.Errorf("%s: %v %q, want %v and a line with %q", tc.name, ok, why, tc.ok, tc.reason)
		}
	}
}

// fakeChecker is a Checker whose servers' states are the map's, by node (an error for
// a node that is down).
func fakeChecker(t *testing.T, kind topology.Kind, states map[string]state, mu *sync.Mutex) *Checker {
	t.Helper()
	c, err := NewChecker(CheckConfig{Kind: kind, Nodes: []Backend{{"n1", "127.0.0.1", 1}, {"n2", "127.0.0.1", 2}, {"n3", "127.0.0.1", 3}}, CheckInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	byDB := map[*sql.DB]string{}
	for n, db := range c.dbs {
		byDB[db] = n
	}
	c.rule.read = func(_ context.Context, db *sql.DB) (state, error) {
		mu.Lock()
		defer mu.Unlock()
		s, ok := states[byDB[db]]
		if !ok {
			return s, errors.New("dial tcp: connection refused")
		}
		return s, nil
	}
	return c
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// TestCheckerOneWriter: on Galera (every Synced node can write) one node is the writer at
// a time: n1 first, n2 after n1 fails, and n2 still when n1 is back; a reader is any
// other Synced node, never the writer; an unknown node is 404.
func TestCheckerOneWriter(t *testing.T) {
	var mu sync.Mutex
	synced := state{WsrepState: 4, ClusterStatus: "Primary"}
	states := map[string]state{"n1": synced, "n2": synced, "n3": synced}
	c := fakeChecker(t, topology.Galera, states, &mu)
	want := func(path string, code int, text string) {
		t.Helper()
		got, body := get(t, c, path)
		if got != code || !strings.Contains(body, text) || strings.Count(body, "\n") != 1 {
			t.Errorf("GET %s: %d %q, want %d and one line with %q", path, got, body, code, text)
		}
	}
	want("/write/n1", 200, "n1 write: the writer")
	want("/write/n2", 503, "not the writer (n1 is)")
	want("/read/n1", 503, "the writer, not a reader")
	want("/read/n2", 200, "Synced")
	want("/read/n3", 200, "Synced")

	mu.Lock()
	delete(states, "n1") // killed
	mu.Unlock()
	want("/write/n1", 503, "not the writer (n2 is)") // n2 took over
	want("/write/n2", 200, "the writer")
	want("/write/n3", 503, "not the writer (n2 is)")
	want("/read/n2", 503, "the writer")
	want("/read/n1", 503, "connection refused")

	mu.Lock()
	states["n1"] = synced // back: n2 stays the writer
	mu.Unlock()
	want("/write/n1", 503, "not the writer (n2 is)")
	want("/write/n2", 200, "the writer")
	want("/read/n1", 200, "Synced")

	mu.Lock()
	for n := range states {
		states[n] = state{WsrepState: 1, ClusterStatus: "non-Primary"}
	}
	mu.Unlock()
	want("/write/n2", 503, "no writer: n2: wsrep_local_state 1")
	want("/write/n9", 404, "NODE one of n1, n2, n3")
	want("/check/n1", 404, "want /write/NODE")
}

// TestCheckerGroup: a single-primary group's writer is its PRIMARY, not n1 first; a
// primary whose check fails while no other member is PRIMARY (a slow answer, an
// election) is no reader.
func TestCheckerGroup(t *testing.T) {
	var mu sync.Mutex
	sec := state{MemberState: "ONLINE", MemberRole: "SECONDARY", Online: 3, Members: 3}
	pri := state{MemberState: "ONLINE", MemberRole: "PRIMARY", Online: 3, Members: 3}
	states := map[string]state{"n1": sec, "n2": pri, "n3": sec}
	c := fakeChecker(t, topology.Group, states, &mu)
	codes := func(want map[string]int) {
		t.Helper()
		for path, code := range want {
			if got, body := get(t, c, path); got != code {
				t.Errorf("GET %s: %d %q, want %d", path, got, body, code)
			}
		}
	}
	codes(map[string]int{"/write/n1": 503, "/write/n2": 200, "/write/n3": 503, "/read/n1": 200, "/read/n2": 503, "/read/n3": 200})
	mu.Lock()
	states["n2"] = sec // n2 fails its writer check: an election under way
	mu.Unlock()
	codes(map[string]int{"/write/n2": 503, "/read/n2": 503, "/read/n1": 200})
	mu.Lock()
	states["n3"] = pri // elected
	mu.Unlock()
	codes(map[string]int{"/write/n3": 200, "/read/n2": 200, "/read/n3": 503})
}

// TestServeStopsWithoutConfig: Serve answers on its address and returns by itself once
// its config file is removed.
func TestServeStopsWithoutConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "check.json")
	cfg := `{"kind":"async","nodes":[{"name":"n1","host":"127.0.0.1","port":1}],"user":"u","password":"p","listen":"127.0.0.1:0","check_interval":100000000}`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), p) }()
	time.Sleep(200 * time.Millisecond)
	os.Remove(p)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * ConfigPoll):
		t.Fatal("Serve still running 3 s after its config file was removed")
	}
	if err := Serve(context.Background(), p); err == nil {
		t.Error("Serve without a config file: no error")
	}
}
