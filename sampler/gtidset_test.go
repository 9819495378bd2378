package sampler

import (
	"strings"
	"testing"
)

const (
	u1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	u2 = "8a94f357-aab4-11df-86ab-c80aa9429563"
)

func TestParseGTIDSet(t *testing.T) {
	for _, c := range []struct {
		in, canon string
		count     uint64
	}{
		{"", "", 0},
		{"  \n", "", 0},
		{u1 + ":1-5", u1 + ":1-5", 5},
		{u1 + ":7", u1 + ":7", 1},
		{u1 + ":1-5:7-9", u1 + ":1-5:7-9", 8},
		{u1 + ":1-5:6-9", u1 + ":1-9", 9},              // adjacent intervals merge
		{u1 + ":7-9:1-8", u1 + ":1-9", 9},              // unsorted, overlapping
		{strings.ToUpper(u1) + ":1-3", u1 + ":1-3", 3}, // UUIDs are case-insensitive
		{u2 + ":1-3,\n" + u1 + ":1-5", u1 + ":1-5," + u2 + ":1-3", 8},
		{u1 + ":1-2, " + u1 + ":3-4", u1 + ":1-4", 4}, // repeated uuid merges
		{u1 + ":1-5:Tag_A:1-3:tag_b:7", u1 + ":1-5:tag_a:1-3:tag_b:7", 9},
		{u1 + ":tag_a:1-3", u1 + ":tag_a:1-3", 3},
		{u1 + ":9223372036854775807", u1 + ":9223372036854775807", 1},
	} {
		s, err := ParseGTIDSet(c.in)
		if err != nil {
			t.Errorf("ParseGTIDSet(%q): %v", c.in, err)
			continue
		}
		if got := s.String(); got != c.canon {
			t.Errorf("ParseGTIDSet(%q).String() = %q, want %q", c.in, got, c.canon)
		}
		if got := s.Count(); got != c.count {
			t.Errorf("ParseGTIDSet(%q).Count() = %d, want %d", c.in, got, c.count)
		}
	}
}

func TestParseGTIDSetErrors(t *testing.T) {
	for _, in := range []string{
		"nonsense:1-5",
		u1,                          // no interval
		u1 + ":",                    // empty interval
		u1 + ":0",                   // 0 is not a transaction number
		u1 + ":5-3",                 // end < start
		u1 + ":1-x",                 // not a number
		u1 + ":9223372036854775808", // > 2^63-1
		u1 + ":1-3:tag",             // tag without interval
		u1 + ":tag:other:1",         // tag without interval, followed by another
		u1 + ":Bad-Tag:1",           // not a tag
		u1[:35] + ":1",              // short uuid
	} {
		if s, err := ParseGTIDSet(in); err == nil {
			t.Errorf("ParseGTIDSet(%q) = %q, want an error", in, s)
		}
	}
}

func TestGTIDSubtractCount(t *testing.T) {
	for _, c := range []struct {
		src, rep, diff string
		n              uint64
	}{
		{"", "", "", 0},
		{u1 + ":1-10", "", u1 + ":1-10", 10},
		{u1 + ":1-10", u1 + ":1-10", "", 0},
		{u1 + ":1-10", u1 + ":1-7", u1 + ":8-10", 3},
		{u1 + ":1-10", u1 + ":1-20", "", 0}, // replica ahead: nothing missing
		{u1 + ":1-10", u1 + ":3-4:6", u1 + ":1-2:5:7-10", 7},
		{u1 + ":1-5:11-20", u1 + ":1-12", u1 + ":13-20", 8},
		{u1 + ":1-100," + u2 + ":1-50", u1 + ":1-90," + u2 + ":1-50", u1 + ":91-100", 10},
		{u1 + ":1-100," + u2 + ":1-50", u1 + ":1-100", u2 + ":1-50", 50},
		{u1 + ":1-10:t:1-5", u1 + ":1-10:t:1-2", u1 + ":t:3-5", 3}, // tags count apart from untagged
		{u1 + ":t:1-5", u1 + ":1-5", u1 + ":t:1-5", 5},
		{u1 + ":1-3:5-7:9-11", u1 + ":2:6:10", u1 + ":1:3:5:7:9:11", 6},
		{u1 + ":2-9", u1 + ":1-3:8-20", u1 + ":4-7", 4},
	} {
		s, err := ParseGTIDSet(c.src)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseGTIDSet(c.rep)
		if err != nil {
			t.Fatal(err)
		}
		d := s.Subtract(r)
		if d.String() != c.diff || d.Count() != c.n {
			t.Errorf("%q - %q = %q (%d), want %q (%d)", c.src, c.rep, d, d.Count(), c.diff, c.n)
		}
		if s.String() != mustCanon(t, c.src) {
			t.Errorf("Subtract modified its receiver: %q", s)
		}
	}
}

func mustCanon(t *testing.T, s string) string {
	t.Helper()
	g, err := ParseGTIDSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return g.String()
}

func TestMariaDBBacklog(t *testing.T) {
	for _, c := range []struct {
		src, rep string
		want     uint64
	}{
		{"", "", 0},
		{"0-1-100", "0-1-100", 0},
		{"0-1-100", "0-1-90", 10},
		{"0-1-100", "", 100},       // replica has nothing yet
		{"0-2-150", "0-1-140", 10}, // server_id differs (after a failover): seqno is per domain
		{"0-1-90", "0-1-100", 0},   // replica ahead of the read of the source: never negative
		{"0-1-100,1-3-20", "1-3-15,0-1-97", 8},
		{"0-1-100,\n 1-3-20", "0-1-100", 20}, // whole domain missing on the replica
		{"0-1-5", "0-1-5,7-9-100", 0},        // replica-only domain is not backlog
	} {
		s, err := ParseMariaDBGTIDPos(c.src)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseMariaDBGTIDPos(c.rep)
		if err != nil {
			t.Fatal(err)
		}
		if got := MariaDBBacklog(s, r); got != c.want {
			t.Errorf("MariaDBBacklog(%q, %q) = %d, want %d", c.src, c.rep, got, c.want)
		}
	}
}

func TestParseMariaDBGTIDPos(t *testing.T) {
	p, err := ParseMariaDBGTIDPos("0-1-100, 2-5-7")
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 || p[0] != (MariaDBGTID{0, 1, 100}) || p[2] != (MariaDBGTID{2, 5, 7}) {
		t.Fatalf("got %+v", p)
	}
	for _, bad := range []string{"0-1", "0-1-2-3", "a-1-2", "0-1-x", "0-99999999999-1", "0-1-100,,0-x-1"} {
		if _, err := ParseMariaDBGTIDPos(bad); err == nil {
			t.Errorf("ParseMariaDBGTIDPos(%q): want an error", bad)
		}
	}
}
