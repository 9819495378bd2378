package experiment

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/topology"
)

// TestStrictVerdict: a strict checker fails the scenario run naming the cells with
// anomalies and the cells where it checked nothing (its error, an invalid verdict, no
// committed operation, a finished cell without its result); without strict, or when every
// cell checked something without anomalies, the run is not failed.
func TestStrictVerdict(t *testing.T) {
	n0, n5, n40 := 0, 5, 40
	yes, no := true, false
	good := CellRecord{Index: 2, Status: StatusDone, Anomalies: &n0, CheckerValid: &yes, CheckerOK: &n40}
	cells := []CellRecord{{Index: 1, Status: StatusDone, Anomalies: &n5, CheckerValid: &no, CheckerOK: &n40}, good, {Index: 3}}
	err := strictVerdict(&CheckerSpec{Workload: "register", Strict: true}, cells)
	if err == nil || !strings.Contains(err.Error(), "failed in 1 of 3 cells (c001: 5 anomalies;") {
		t.Fatalf("strict: %v", err)
	}
	if err := strictVerdict(&CheckerSpec{Workload: "register"}, cells); err != nil {
		t.Errorf("not strict: %v", err)
	}
	if err := strictVerdict(&CheckerSpec{Workload: "bank", Strict: true}, cells[1:]); err != nil {
		t.Errorf("strict without anomalies: %v", err)
	}
	for _, tc := range []struct {
		mod  func(c *CellRecord)
		want string
	}{
		{func(c *CellRecord) { c.CheckerError = "connect n1: refused" }, "c002: checked nothing: connect n1: refused"},
		{func(c *CellRecord) { c.CheckerValid = &no }, "c002: checked nothing: the verdict is not valid"},
		{func(c *CellRecord) { c.CheckerOK = &n0 }, "c002: checked nothing: no operation committed"},
		{func(c *CellRecord) { c.Anomalies, c.CheckerValid, c.CheckerOK = nil, nil, nil }, "c002: checked nothing: no checker result"},
	} {
		c := good
		tc.mod(&c)
		if err := strictVerdict(&CheckerSpec{Workload: "register", Strict: true}, []CellRecord{c}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", c, err, tc.want)
		}
	}
}

// TestCheckerSpecRefused: bad checker sections name the field and the value.
func TestCheckerSpecRefused(t *testing.T) {
	for _, c := range []struct {
		s     CheckerSpec
		field string
	}{
		{CheckerSpec{Workload: "elle"}, "checker.workload"},
		{CheckerSpec{Workload: "list-append", Keys: 2000}, "checker.keys"},
		{CheckerSpec{Workload: "register", Keys: 2000}, "checker.keys"},
		{CheckerSpec{Workload: "bank", Keys: 1}, "checker.keys"},
		{CheckerSpec{Workload: "bank", Threads: -2}, "checker.threads"},
		{CheckerSpec{Workload: "register", Locking: "share"}, "checker.locking"},
		{CheckerSpec{Workload: "register", Isolation: "snapshot"}, "checker.isolation"},
		{CheckerSpec{Workload: "list-append", Rate: -5}, "checker.rate"},
		{CheckerSpec{Workload: "bank", Realtime: true}, "checker.realtime"},
		{CheckerSpec{Workload: "register", ReadNodes: CheckerReadNodes{WorkloadNodes{All: []string{"n2"}}}}, "checker.read_nodes"},
	} {
		var fe *topology.FieldError
		if err := c.s.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a FieldError on %s", c.s, err, c.field)
		}
	}
	if err := (&CheckerSpec{Workload: "bank", Keys: 10, Isolation: "serializable"}).Validate(); err != nil {
		t.Errorf("a valid bank: %v", err)
	}
	if err := (&CheckerSpec{Workload: "list-append", Realtime: true}).Validate(); err != nil {
		t.Errorf("a valid realtime list-append: %v", err)
	}
}

// TestCheckerReadNodes: checker.read_nodes is checked against the topologies' node names
// like workload.read_nodes, under its own name, and refused for register.
func TestCheckerReadNodes(t *testing.T) {
	head := "name: x\ntopologies:\n  - {name: g, kind: galera, nodes: 3, flavor: mariadb}\n  - {name: a, kind: async, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	for in, want := range map[string]string{
		"checker: {workload: list-append, read_nodes: [n3]}\n":       `line 7: checker.read_nodes "n3": topology a has no such node (its nodes are n1..n2)`,
		"checker: {workload: bank, read_nodes: {g: [n2, n2]}}\n":     `checker.read_nodes.g "n2": node given twice`,
		"checker: {workload: bank, read_nodes: {b: [n1]}}\n":         `line 7: checker.read_nodes "b": not one of the topologies' names`,
		"checker: {workload: register, read_nodes: {g: [n2, n3]}}\n": `checker.read_nodes "register": the register workload has no read-only transactions`,
	} {
		_, err := ParseScenario([]byte(head + in))
		var fe *topology.FieldError
		if err == nil || !strings.Contains(err.Error(), want) || (!strings.Contains(in, "n2, n2") && !errors.As(err, &fe)) {
			t.Errorf("%q: %v, want a FieldError %q", in, err, want)
		}
	}
	s := mustParse(t, head+"checker: {workload: list-append, read_nodes: {g: [n2, n3]}}\n")
	if !slices.Equal(s.Checker.ReadNodes.For("g"), []string{"n2", "n3"}) || s.Checker.ReadNodes.For("a") != nil {
		t.Errorf("per topology: %+v", s.Checker.ReadNodes)
	}
	p, _ := s.Plan("")
	var out bytes.Buffer
	p.Print(&out, nil)
	if !strings.Contains(out.String(), "  the checker's read-only transactions go to n2, n3 (checker.read_nodes)") || strings.Count(out.String(), "checker's read-only") != 1 {
		t.Errorf("plan:\n%s", out.String())
	}
}
