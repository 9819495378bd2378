package netem

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"600us": 600 * time.Microsecond, "600µs": 600 * time.Microsecond, "0.6ms": 600 * time.Microsecond,
		"5ms": 5 * time.Millisecond, "1s": time.Second, "0": 0, "1.5ms": 1500 * time.Microsecond,
	}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"5", "-1ms", "1.5us", "fast", "", "600ns"} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), "duration") {
			t.Errorf("ParseDuration(%q): want an error naming the duration, got %v", in, err)
		}
	}
}

func TestParseLoss(t *testing.T) {
	good := map[string]float64{"1%": 0.01, "0.01": 0.01, "100%": 1, "0": 0, "0.5%": 0.005, "0.999": 0.999}
	for in, want := range good {
		got, err := ParseLoss(in)
		if err != nil || got < want-1e-12 || got > want+1e-12 {
			t.Errorf("ParseLoss(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"101%", "-1%", "2", "1", "x", "NaN"} {
		if _, err := ParseLoss(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseLoss(%q): want an error naming the value, got %v", in, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]uint64{"10mbit": 1250000, "1gbit": 125000000, "500kbit": 62500, "2mbps": 2000000, "1000": 1000, "8bit": 1}
	for in, want := range good {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"fast", "-1mbit", "1bit", "mbit", "0", "0mbit"} {
		if _, err := ParseRate(in); err == nil || !strings.Contains(err.Error(), "rate") {
			t.Errorf("ParseRate(%q): want an error, got %v", in, err)
		}
	}
}

func TestParseImpairment(t *testing.T) {
	imp, err := ParseImpairment("delay 5ms jitter 1ms distribution normal loss 1% rate 10mbit")
	want := Impairment{Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Distribution: DistNormal, Loss: 0.01, Rate: 1250000}
	if err != nil || imp != want {
		t.Fatalf("got %+v, %v; want %+v", imp, err, want)
	}
	if imp, err := ParseImpairment("0.6ms"); err != nil || imp.Delay != 600*time.Microsecond {
		t.Errorf("bare duration: %+v %v", imp, err)
	}
	if imp, err := ParseImpairment("partition"); err != nil || !imp.Partition {
		t.Errorf("partition: %+v %v", imp, err)
	}
	if got := (Impairment{Delay: 600 * time.Microsecond, Jitter: 1500 * time.Microsecond}).String(); got != "delay 600us jitter 1.5ms" {
		t.Errorf("String() = %q, want ASCII units", got)
	}
	if imp, err := ParseImpairment(want.String()); err != nil || imp != want {
		t.Errorf("String round trip %q: %+v %v", want.String(), imp, err)
	}
	for in, field := range map[string]string{
		"delay":                  `"delay"`,
		"delay 5ms loss":         "needs a value",
		"delay 5ms speed 3":      `"speed"`,
		"loss 200%":              "200%",
		"distribution pareto":    `"pareto"`,
		"delay 5ms jitter 1.5us": "1.5us",
		"delay 1ms delay 2ms":    "delay given twice",
		"latency 1ms delay 2ms":  "delay given twice",
		"partition loss 1%":      "partition drops every packet",
		"jitter 1ms":             "needs a delay",
		"none delay 1ms":         "none takes nothing else",
		"delay 11s":              "not a network",
		"delay 1ms loss 1":       "ambiguous",
	} {
		if _, err := ParseImpairment(in); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("ParseImpairment(%q) = %v; want an error containing %s", in, err, field)
		}
	}
}

func TestValidate(t *testing.T) {
	bad := map[string]Impairment{
		"delay -1ms":   {Delay: -time.Millisecond},
		"jitter -1µs":  {Jitter: -time.Microsecond},
		"loss 1.5":     {Loss: 1.5},
		"distribution": {Distribution: "pareto"},
	}
	for want, imp := range bad {
		if err := imp.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v; want an error containing %q", imp, err, want)
		}
	}
}

func TestSpecForms(t *testing.T) {
	s, err := NewSpec([]string{"n1", "n2", "n3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ParseGroups("dc1: [n1,n2], dc2: [n3]; intra 0.1ms, inter 5ms"); err != nil {
		t.Fatal(err)
	}
	check := func(from, to string, want time.Duration) {
		t.Helper()
		if got := s.Get(from, to).Delay; got != want {
			t.Errorf("%s->%s delay %v, want %v", from, to, got, want)
		}
	}
	check("n1", "n2", 100*time.Microsecond)
	check("n2", "n1", 100*time.Microsecond)
	check("n1", "n3", 5*time.Millisecond)
	check("n3", "n2", 5*time.Millisecond)
	if rtt := s.RequestedRTT("n1", "n3"); rtt != 10*time.Millisecond {
		t.Errorf("RTT n1<->n3 = %v, want 10ms (one-way 5ms each way)", rtt)
	}
	// A directed link differs from its reverse.
	if err := s.SetLink("n1", "n3", Impairment{Delay: 600 * time.Microsecond}); err != nil {
		t.Fatal(err)
	}
	check("n1", "n3", 600*time.Microsecond)
	check("n3", "n1", 5*time.Millisecond)
	// Per node: outgoing links only.
	if err := s.SetNode("n2", Impairment{Partition: true}); err != nil {
		t.Fatal(err)
	}
	if !s.Get("n2", "n1").Partition || !s.Get("n2", "n3").Partition || s.Get("n1", "n2").Partition {
		t.Errorf("SetNode partition: %v", s.Links)
	}
	// Zero impairments are not stored.
	if err := s.SetNode("n2", Impairment{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Links[Link{"n2", "n1"}]; ok {
		t.Error("zero impairment stored")
	}
}

func TestSpecErrors(t *testing.T) {
	if _, err := NewSpec([]string{"n1", "n1"}); err == nil || !strings.Contains(err.Error(), `"n1"`) {
		t.Errorf("duplicate node: %v", err)
	}
	s, _ := NewSpec([]string{"n1", "n2", "n3"})
	cases := map[string]func() error{
		`"n9"`:        func() error { return s.SetLink("n1", "n9", Impairment{}) },
		"itself":      func() error { return s.SetLink("n1", "n1", Impairment{}) },
		"loss":        func() error { return s.SetNode("n1", Impairment{Loss: 2}) },
		`"n3": in no`: func() error { return s.ParseGroups("a: [n1], b: [n2]; inter 1ms") },
		"groups a":    func() error { return s.ParseGroups("a: [n1], b: [n2,n1,n3]; inter 1ms") },
		"intra or":    func() error { return s.ParseGroups("a: [n1,n2,n3]; within 1ms") },
		"missing ]":   func() error { return s.ParseGroups("a: [n1,n2,n3; intra 1ms") },
		"want \"g1":   func() error { return s.ParseGroups("a: [n1,n2,n3]") },
		"5x":          func() error { return s.ParseGroups("a: [n1,n2,n3]; intra 5x") },
	}
	for want, f := range cases {
		if err := f(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %s, got %v", want, err)
		}
	}
}
