package experiment

import (
	"fmt"
	"strings"
	"testing"

	"github.com/habench/habench/proxy"
	"github.com/habench/habench/schema"
)

// A writer killed at 10 s, as the proxy's reads show it: n1 serving the write endpoint
// with 4 sessions, failing checks from 10.3 s, marked down at 10.6 s (its 4 sessions
// closed as it is), no server until n2 comes up at 11.2 s. The fault's timeline, the write
// servers' sequence and the time without one come from the changes alone.
func TestProxyTimeline(t *testing.T) {
	w := &proxyWatch{done: make(chan struct{}), last: map[string]schema.ProxyEvent{}}
	close(w.done)
	rows := func(n1, n2 string, s1, s2 int) []proxy.Server {
		return []proxy.Server{{Backend: "write", Name: "n1", Status: n1, Sessions: s1},
			{Backend: "write", Name: "n2", Status: n2, Backup: true, Sessions: s2},
			{Backend: "read", Name: "n2", Status: n2}}
	}
	for i := 0; i <= 150; i++ {
		at := float64(i) / 10
		switch {
		case at < 10.3:
			w.record(at, rows("UP", "DOWN", 4, 0), nil)
		case at < 10.6:
			w.record(at, rows("UP 1/3", "DOWN", 4, 0), nil)
		case at < 10.7: // HAProxy closes a server's sessions as it marks it down
			w.record(at, rows("DOWN", "DOWN", 0, 0), nil)
		case at < 11.2:
			w.record(at, rows("DOWN", "DOWN 1/2", 0, 0), nil)
		case at < 11.5:
			w.record(at, rows("DOWN", "UP", 0, 4), nil)
		default:
			w.record(at, nil, fmt.Errorf("connection refused"))
		}
	}
	evs, sum, first := w.result()
	if sum.Polls != 151 || sum.PollErrors != 36 || sum.Error != "" || first != "connection refused" || strings.Join(sum.WriteServers, ",") != "n1,n2" {
		t.Errorf("summary %+v, first error %q: want 151 polls, 36 errors (the first: connection refused), write servers n1,n2", sum, first)
	}
	if d := sum.NoWriterS; d < 0.59 || d > 0.61 {
		t.Errorf("no writer for %.2f s, want 0.6 (10.6 s to 11.2 s)", d)
	}
	fs := []schema.FaultSummary{{}, {}}
	proxyFaults(fs, []schema.RunFault{{AtS: 10}, {AtS: 14}}, evs)
	p := fs[0].Proxy
	if p == nil || p.Server != "n1" || p.DownS == nil || p.LeftS == nil || p.NewServerS == nil || p.NewServer != "n2" || p.SessionsAtDown != 4 {
		t.Fatalf("fault at 10 s: %+v, want n1 down with 4 sessions, then n2", p)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"down", *p.DownS, 0.6}, {"sessions gone", *p.LeftS, 0.6}, {"new server", *p.NewServerS, 1.2}} {
		if c.got < c.want-0.01 || c.got > c.want+0.01 {
			t.Errorf("%s after %.2f s, want %.1f", c.name, c.got, c.want)
		}
	}
	if p := fs[1].Proxy; p == nil || p.Server != "n2" || p.DownS != nil || p.NewServerS != nil {
		t.Errorf("fault at 14 s (the proxy unreadable from 11.5 s on): %+v, want n2 and nothing seen", p)
	}
	if csv := proxyEventsCSV(evs); !strings.HasPrefix(csv, "at_s,endpoint,server,status,serving,sessions\n0.000,write,n1,UP,true,4\n") {
		t.Errorf("proxy_events.csv starts %q", csv[:80])
	}
}
