package netem

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestRequestBuildOrder(t *testing.T) {
	r := Request{
		All:       "1ms",
		Groups:    "dc1: [n1,n2], dc2: [n3,n4]; intra 100us, inter 5ms",
		Node:      map[string]string{"n2": "delay 2ms loss 1%"},
		Link:      map[string]string{"n1->n2": "600us"},
		Partition: []string{"n4"},
	}
	s, err := r.Build([]string{"n1", "n2", "n3", "n4"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[Link]Impairment{
		{"n1", "n2"}: {Delay: 600 * time.Microsecond},           // link beats groups
		{"n2", "n1"}: {Delay: 2 * time.Millisecond, Loss: 0.01}, // node beats groups
		{"n2", "n3"}: {Delay: 2 * time.Millisecond, Loss: 0.01},
		{"n1", "n3"}: {Delay: 5 * time.Millisecond}, // groups: inter beats all
		{"n3", "n1"}: {Delay: 5 * time.Millisecond},
		{"n3", "n2"}: {Delay: 5 * time.Millisecond},
		{"n4", "n1"}: {Partition: true}, // partition beats everything, both directions
		{"n1", "n4"}: {Partition: true},
		{"n2", "n4"}: {Partition: true},
		{"n3", "n4"}: {Partition: true},
		{"n4", "n3"}: {Partition: true},
	}
	for l, w := range want {
		if got := s.Get(l.From, l.To); got != w {
			t.Errorf("%s = %v, want %v", l, got, w)
		}
	}
	if !s.Partitioned("n1", "n4") || !s.Partitioned("n4", "n2") || s.Partitioned("n1", "n2") {
		t.Errorf("Partitioned wrong: %v", s.Describe())
	}
	if got := s.RequestedRTT("n1", "n2"); got != 2600*time.Microsecond {
		t.Errorf("RequestedRTT(n1,n2) = %v, want 2.6ms", got)
	}
}

func TestRequestErrorsNameFieldAndValue(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	for _, c := range []struct {
		r          Request
		field, val string
		reason     string
	}{
		{Request{All: "5"}, "all", "5", "unit"},
		{Request{Groups: "dc1: [n1]; intra 1ms"}, "groups", "dc1: [n1]; intra 1ms", "in no group"},
		{Request{Node: map[string]string{"n9": "1ms"}}, "node.n9", "1ms", "not in this sandbox"},
		{Request{Node: map[string]string{"n1": "loss 150%"}}, "node.n1", "loss 150%", "loss"},
		{Request{Link: map[string]string{"n1-n2": "1ms"}}, "link", "n1-n2", "FROM->TO"},
		{Request{Link: map[string]string{"n1->n1": "1ms"}}, "link.n1->n1", "1ms", "itself"},
		{Request{Link: map[string]string{"n1->n2": "delay"}}, "link.n1->n2", "delay", "want e.g. 600us"},
		{Request{Link: map[string]string{"n1->n2": "delay 1ms jitter"}}, "link.n1->n2", "delay 1ms jitter", "needs a value"},
		{Request{Partition: []string{"n7"}}, "partition", "n7", "not in this sandbox"},
		{Request{Partition: []string{"n2", "n2"}}, "partition", "n2", "listed twice"},
		{Request{Node: map[string]string{"n1": " "}}, "node.n1", " ", "empty impairment"},
		{Request{Link: map[string]string{"n1->n2": ""}}, "link.n1->n2", "", "empty impairment"},
		{Request{All: "0"}, "links", "--all 0", "impairs no link"},
		{Request{All: "none"}, "links", "--all none", "impairs no link"},
		{Request{Groups: "dc1: [n1,n2,n3]; inter 2ms"}, "groups", "dc1: [n1,n2,n3]; inter 2ms", "only one group"},
		{Request{Groups: "a: [n1], b: [n2,n3]; inter 2ms, inter 3ms"}, "groups", "a: [n1], b: [n2,n3]; inter 2ms, inter 3ms", "inter given twice"},
	} {
		_, err := c.r.Build(nodes)
		var re *RequestError
		if !errors.As(err, &re) {
			t.Errorf("%+v: error %v, want a RequestError", c.r, err)
			continue
		}
		if re.Field != c.field || re.Value != c.val || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%+v: got field %q value %q error %q; want field %q value %q reason %q", c.r, re.Field, re.Value, err, c.field, c.val, c.reason)
		}
	}
}

func TestRequestYAML(t *testing.T) {
	var short struct {
		Links Request `yaml:"links"`
	}
	if err := yaml.Unmarshal([]byte("links: 0.6ms\n"), &short); err != nil {
		t.Fatal(err)
	}
	if short.Links.All != "0.6ms" || short.Links.String() != "--all 0.6ms" {
		t.Errorf("short form: %+v (%s)", short.Links, short.Links.String())
	}
	var long struct {
		Links Request `yaml:"links"`
	}
	src := "links:\n  groups: \"dc1: [n1, n2], dc2: [n3]; inter 5ms\"\n  link:\n    n1->n3: partition\n  partition: [n2]\n"
	if err := yaml.Unmarshal([]byte(src), &long); err != nil {
		t.Fatal(err)
	}
	if long.Links.Link["n1->n3"] != "partition" || len(long.Links.Partition) != 1 || long.Links.Groups == "" {
		t.Errorf("mapping form: %+v", long.Links)
	}
	s, err := long.Links.Build([]string{"n1", "n2", "n3"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Get("n1", "n3").Partition || s.Get("n3", "n1").Delay != 5*time.Millisecond {
		t.Errorf("built: %v", s.Describe())
	}
	var bad struct {
		Links Request `yaml:"links"`
	}
	err = yaml.Unmarshal([]byte("links:\n  al: 1ms\n"), &bad)
	if err == nil || !strings.Contains(err.Error(), `unknown key "al"`) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("unknown key: err %v, want it named with its line", err)
	}
}

// TestRequestAway (issue 31): away: {n3: 0.6ms} puts n3 0.6 ms from each other node in
// both directions and leaves the links among the others alone (what node alone does not:
// it impairs only what leaves n3); it overrides node and all, a link overrides it; an
// unknown node or a bad impairment names away.NODE; the YAML and command-line forms carry
// it. A zero impairment within groups (intra 0ms) is allowed.
func TestRequestAway(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	r := Request{All: "0.1ms", Node: map[string]string{"n3": "5ms"}, Away: map[string]string{"n3": "0.6ms"}, Link: map[string]string{"n2->n3": "1ms"}}
	s, err := r.Build(nodes)
	if err != nil {
		t.Fatal(err)
	}
	for l, want := range map[Link]time.Duration{
		{"n1", "n2"}: 100 * time.Microsecond, {"n2", "n1"}: 100 * time.Microsecond, // among the others: all
		{"n1", "n3"}: 600 * time.Microsecond, {"n3", "n1"}: 600 * time.Microsecond, // away beats node and all, both ways
		{"n3", "n2"}: 600 * time.Microsecond, {"n2", "n3"}: time.Millisecond, // a link beats away
	} {
		if got := s.Get(l.From, l.To).Delay; got != want {
			t.Errorf("%s delay %v, want %v", l, got, want)
		}
	}
	alone, err := Request{Away: map[string]string{"n3": "0.6ms"}}.Build(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(alone.Links) != 4 || !alone.Get("n1", "n2").IsZero() || alone.RequestedRTT("n1", "n3") != 1200*time.Microsecond {
		t.Errorf("away alone: %v, want the 4 links of n3 at 0.6 ms (1.2 ms round trip) and n1<->n2 untouched", alone.Describe())
	}
	for _, c := range []struct {
		r     Request
		field string
	}{
		{Request{Away: map[string]string{"n9": "1ms"}}, "away.n9"},
		{Request{Away: map[string]string{"n3": "soon"}}, "away.n3"},
		{Request{Away: map[string]string{"n3": " "}}, "away.n3"},
	} {
		var re *RequestError
		if _, err := c.r.Build(nodes); !errors.As(err, &re) || re.Field != c.field {
			t.Errorf("%+v: %v, want an error on %s", c.r, err, c.field)
		}
	}
	var y struct {
		Links Request `yaml:"links"`
	}
	if err := yaml.Unmarshal([]byte("links: {all: 0.1ms, away: {n3: 0.6ms}}\n"), &y); err != nil || y.Links.Away["n3"] != "0.6ms" {
		t.Fatalf("yaml: %+v %v", y.Links, err)
	}
	if got := y.Links.String(); got != "--all 0.1ms --away n3=0.6ms" {
		t.Errorf("String() = %q", got)
	}
	g, err := Request{Groups: "a: [n1, n2], b: [n3]; intra 0ms, inter 0.6ms"}.Build(nodes)
	if err != nil || !g.Get("n1", "n2").IsZero() || g.Get("n1", "n3").Delay != 600*time.Microsecond {
		t.Errorf("groups with intra 0ms: %v %v", err, g.Describe())
	}
}
