package sampler

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/schema"
)

// at is one sample of node at second sec.
func at(sec int, node, metric string, v float64) Sample {
	return Sample{Elapsed: time.Duration(sec) * time.Second, Node: node, Metric: metric, Value: v}
}

// TestGaleraSection: the galera section sums and averages per node from the samples
// (paused avg over the paused samples, maxima of the queues), nodes by name, and
// report.md's table shows them; no galera samples, no section.
func TestGaleraSection(t *testing.T) {
	var ss []Sample
	for sec, v := range []float64{0.5, 0, 0.25} {
		ss = append(ss, at(sec, "n2", MetricGaleraFCPaused, v), at(sec, "n2", MetricGaleraFCSent, 1),
			at(sec, "n2", MetricGaleraRecvQueue, 10*v), at(sec, "n1", MetricGaleraCertFailures, 2),
			at(sec, "n1", MetricGaleraBFAborts, float64(sec)), at(sec, "n1", MetricGaleraLastCommittedGap, 3-float64(sec)),
			at(sec, "n1", "lag_s", 9))
	}
	var s schema.Summary
	if err := Summarize(SummaryInput{Samples: ss, Every: time.Second}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Galera) != 2 || s.Galera[0].Node != "n1" || s.Galera[1].Node != "n2" {
		t.Fatalf("galera section %+v, want n1 and n2", s.Galera)
	}
	n1, n2 := s.Galera[0], s.Galera[1]
	if n1.CertFailures != 6 || n1.BFAborts != 3 || n1.LastCommittedGapMax != 3 || n1.Samples != 0 {
		t.Errorf("n1 %+v", n1)
	}
	if n2.Samples != 3 || n2.PausedAvg != 0.25 || n2.PausedMax != 0.5 || n2.FCSent != 3 || n2.RecvQueueMax != 5 {
		t.Errorf("n2 %+v", n2)
	}
	md := Markdown(&s, SectionsAfterKnobs, math.MaxInt)
	for _, want := range []string{"## Galera flow control and conflicts", "| n1 | 0.000 | 0.000 | 0 | 0 | 6 | 3 | 0 | 3 |", "| n2 | 0.250 | 0.500 | 3 | 0 | 0 | 0 | 5 | 0 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("galera section lacks %q:\n%s", want, md)
		}
	}
	if Markdown(&s, math.MinInt, SectionsAfterKnobs) != "" {
		t.Error("the galera section is rendered before the knob settings")
	}
	var none schema.Summary
	if err := Summarize(SummaryInput{Samples: ss[len(ss)-1:]}, &none); err != nil || none.Galera != nil || none.SemiSync != nil || none.Group != nil {
		t.Errorf("sections without their samples: %+v, %v", none, err)
	}
}

// countSampler is a sampler with its own summary section that results does not declare,
// as a new sampler would be: the count of its samples per node.
type countSampler struct{}

func (countSampler) Name() string       { return "zz_count" }
func (countSampler) Supports(Node) bool { return true }
func (countSampler) Sample(context.Context, *Tick, Node) ([]Sample, error) {
	return nil, nil
}
func (countSampler) SectionOrder() int { return 50 }
func (countSampler) Summarize(in SummaryInput, s *schema.Summary) error {
	n := map[string]int{}
	for _, sm := range in.Samples {
		if sm.Metric == "zz_count" {
			n[sm.Node]++
		}
	}
	if len(n) == 0 {
		return nil
	}
	return s.SetSection("zz_count", n)
}
func (countSampler) Markdown(s *schema.Summary) string {
	var n map[string]int
	if !s.Section("zz_count", &n) {
		return ""
	}
	return fmt.Sprintf("\n## Counts\n\nn1 %d\n", n["n1"])
}

// TestSectionOfANewSampler: a sampler registered with its own Section (one file, no
// field in schema.Summary) has its section written into summary.json after the declared
// keys, read back from it, and rendered in report.md in its SectionOrder's place.
func TestSectionOfANewSampler(t *testing.T) {
	if !Register("zz_count", func() Sampler { return countSampler{} }) {
		t.Fatal("zz_count registered twice")
	}
	defer delete(constructors, "zz_count")
	ss := []Sample{at(0, "n1", "zz_count", 1), at(1, "n1", "zz_count", 1), at(1, "n1", MetricGRMemberState, 1), at(1, "n1", MetricGRMemberRole, 1)}
	s := schema.Summary{Workload: "oltp_read_write"}
	if err := Summarize(SummaryInput{Nodes: []Node{{Name: "n1"}}, Samples: ss, Every: time.Second}, &s); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), `"zz_count":{"n1":2}}`) || !strings.Contains(string(b), `"group":[{"node":"n1"`) {
		t.Errorf("summary.json %s, want the group section and zz_count last", b)
	}
	var back schema.Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	md := Markdown(&back, math.MinInt, SectionsAfterKnobs)
	g, c := strings.Index(md, "## Group Replication"), strings.Index(md, "## Counts\n\nn1 2\n")
	if g < 0 || c < g {
		t.Errorf("report sections, want the group's then the counts:\n%s", md)
	}
	if err := s.SetSection("group", 1); err == nil {
		t.Error("SetSection overwrote the declared group section")
	}
}
