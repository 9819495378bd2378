package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestParseStats reads a CSV captured from HAProxy 2.6.12 running HAProxyText's
// configuration (check server: n2 the writer, n3 the only reader; one session on each
// endpoint): the server rows only, with their status, backup flag, sessions and checks.
func TestParseStats(t *testing.T) {
	f, err := os.Open("testdata/haproxy-2.6-stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, err := ParseStats(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ss {
		got = append(got, s.Backend+"/"+s.Name)
	}
	if strings.Join(got, " ") != "write/n1 write/n2 write/n3 read/n1 read/n2 read/n3" {
		t.Fatalf("servers %v, want the 6 server rows without FRONTEND/BACKEND", got)
	}
	w2, w1, r3 := ss[1], ss[0], ss[5]
	if w2.Status != "UP" || !w2.Up() || !w2.Backup || w2.Sessions != 1 || w2.TotalSessions != 1 || w2.CheckStatus != "L7OK" || w2.CheckCode != 200 {
		t.Errorf("write/n2 %+v: want UP backup, 1 session, L7OK 200", w2)
	}
	if w1.Status != "DOWN" || w1.Up() || w1.Backup || w1.CheckFailures != 1 || w1.Downs != 1 || w1.CheckCode != 503 || w1.CheckDesc != "Layer7 wrong status" {
		t.Errorf("write/n1 %+v: want DOWN active, 1 failure, 1 down, 503", w1)
	}
	if w1.LastChange != 2 {
		t.Errorf("write/n1 lastchg %d, want 2", w1.LastChange)
	}
	if r3.Sessions != 1 || !r3.Up() {
		t.Errorf("read/n3 %+v: want UP with 1 session", r3)
	}
	if s := Summary(ss); s != "write n2, read 1 up: n3" {
		t.Errorf("Summary %q, want write n2, read 1 up: n3", s)
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		ss   []Server
		want string
	}{
		{[]Server{{Backend: "write", Name: "n1", Status: "UP"}, {Backend: "write", Name: "n2", Status: "UP", Backup: true},
			{Backend: "read", Name: "n1", Status: "DOWN"}, {Backend: "read", Name: "n2", Status: "UP 1/3"}, {Backend: "read", Name: "n3", Status: "UP"}}, "write n1, read 2 up: n2, n3"},
		// a backup before the active in the file: the active is HAProxy's choice
		{[]Server{{Backend: "write", Name: "n2", Status: "UP", Backup: true}, {Backend: "write", Name: "n1", Status: "UP"}}, "write n1"},
		{[]Server{{Backend: "write", Name: "n1", Status: "DOWN"}, {Backend: "read", Name: "n2", Status: "DOWN 1/2"}}, "write none up, read none up"},
	} {
		if got := Summary(tc.ss); got != tc.want {
			t.Errorf("Summary = %q, want %q", got, tc.want)
		}
	}
}

func TestSettled(t *testing.T) {
	ok := Server{Status: "UP", CheckStatus: "L7OK"}
	for _, tc := range []struct {
		ss   []Server
		want bool
	}{
		{[]Server{ok, {Status: "DOWN", CheckStatus: "L7STS"}}, true},
		{[]Server{ok, {Status: "UP 1/3", CheckStatus: "L7STS"}}, false},
		{[]Server{ok, {Status: "DOWN 1/2", CheckStatus: "L7OK"}}, false},
		{[]Server{ok, {Status: "UP", CheckStatus: "INI"}}, false},
		{[]Server{ok, {Status: "UP"}}, false},
	} {
		if got := Settled(tc.ss); got != tc.want {
			t.Errorf("Settled(%+v) = %v", tc.ss, got)
		}
	}
}

func TestReadStats(t *testing.T) {
	csv, err := os.ReadFile("testdata/haproxy-2.6-stats.csv")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats;csv" {
			http.NotFound(w, r)
			return
		}
		w.Write(csv)
	}))
	defer srv.Close()
	u := srv.URL + "/stats;csv"
	ss, err := ReadStats(context.Background(), srv.Client(), u)
	if err != nil || len(ss) != 6 {
		t.Fatalf("ReadStats: %d servers, %v", len(ss), err)
	}
	if _, err := ReadStats(context.Background(), srv.Client(), srv.URL+"/other"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: %v", err)
	}
	if _, err := ParseStats(strings.NewReader("<html>\n")); err == nil {
		t.Error("HTML parsed as stats")
	}
	if got := StatsURL("10.233.7.14", 3308); got != "http://10.233.7.14:3308/stats;csv" {
		t.Errorf("StatsURL = %s", got)
	}
}
