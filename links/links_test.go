package links

import (
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
)

func TestLinkEndpoints(t *testing.T) {
	c := &cluster.Cluster{Name: "t1", Network: cluster.NetNamespaces, Nodes: []*cluster.Node{
		{Name: "n1", Host: "10.233.3.11", Netns: "hb-t1-n1"},
		{Name: "n2", Host: "10.233.3.12", Netns: "hb-t1-n2"},
	}}
	eps, err := Endpoints(c)
	if err != nil || len(eps) != 2 || eps[1].Addr.String() != "10.233.3.12" || eps[0].Netns != "hb-t1-n1" {
		t.Fatalf("%+v %v", eps, err)
	}
	c.Network = cluster.NetLoopback
	if _, err := Endpoints(c); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("loopback: %v", err)
	}
	c.Network = cluster.NetNamespaces
	c.Nodes[0].Host = "localhost"
	if _, err := Endpoints(c); err == nil || !strings.Contains(err.Error(), `"localhost"`) {
		t.Errorf("bad host: %v", err)
	}
}

// TestLinkReportRateLimited: the round trips of a rate-limited link (durability-failover's
// "rate 1mbit" on n1's links) grow by serialization, not by a delay: no warning, one note.
func TestLinkReportRateLimited(t *testing.T) {
	imp, err := netem.ParseImpairment("rate 1mbit")
	if err != nil {
		t.Fatal(err)
	}
	spec := &netem.Spec{Links: map[netem.Link]netem.Impairment{{From: "n1", To: "n2"}: imp}}
	l := func(a, b string) netem.Link { return netem.Link{From: a, To: b} }
	base := []netem.LinkRTT{{Link: l("n1", "n2"), Median: 28 * time.Microsecond}, {Link: l("n2", "n1"), Median: 46 * time.Microsecond},
		{Link: l("n2", "n3"), Median: 19 * time.Microsecond}}
	rtts := []netem.LinkRTT{{Link: l("n1", "n2"), Median: 2043 * time.Microsecond, Samples: 20}, {Link: l("n2", "n1"), Median: 1163 * time.Microsecond, Samples: 20},
		{Link: l("n2", "n3"), Median: 900 * time.Microsecond, Samples: 20}}
	rep := linkReport("userspace", spec, base, rtts)
	if len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], "n2->n3: no delay requested") {
		t.Errorf("warnings %q, want only n2->n3's (not rate-limited)", rep.Warnings)
	}
	if want := "rate-limited links: round trips not compared with the request (n1->n2, n2->n1)"; rep.Note != want {
		t.Errorf("note %q, want %q", rep.Note, want)
	}
	if !rep.RTT[0].RateLimited || rep.RTT[2].RateLimited {
		t.Errorf("rtt %+v", rep.RTT)
	}
}
