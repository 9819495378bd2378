package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"

	"github.com/habench/habench/scenario"
)

// TestStrictVerdict: a strict checker fails the scenario run naming the cells with
// anomalies and the cells where it checked nothing (its error, an invalid verdict, no
// committed operation, a finished cell without its result); without strict, or when every
// cell checked something without anomalies, the run is not failed.
func TestStrictVerdict(t *testing.T) {
	n0, n5, n40 := 0, 5, 40
	yes, no := true, false
	good := schema.CellRecord{Index: 2, Status: schema.StatusDone, Anomalies: &n0, CheckerValid: &yes, CheckerOK: &n40}
	cells := []schema.CellRecord{{Index: 1, Status: schema.StatusDone, Anomalies: &n5, CheckerValid: &no, CheckerOK: &n40}, good, {Index: 3}}
	err := strictVerdict(&scenario.CheckerSpec{Workload: "register", Strict: true}, cells)
	if err == nil || !strings.Contains(err.Error(), "failed in 1 of 3 cells (c001: 5 anomalies;") {
		t.Fatalf("strict: %v", err)
	}
	if err := strictVerdict(&scenario.CheckerSpec{Workload: "register"}, cells); err != nil {
		t.Errorf("not strict: %v", err)
	}
	if err := strictVerdict(&scenario.CheckerSpec{Workload: "bank", Strict: true}, cells[1:]); err != nil {
		t.Errorf("strict without anomalies: %v", err)
	}
	for _, tc := range []struct {
		mod  func(c *schema.CellRecord)
		want string
	}{
		{func(c *schema.CellRecord) { c.CheckerError = "connect n1: refused" }, "c002: checked nothing: connect n1: refused"},
		{func(c *schema.CellRecord) { c.CheckerValid = &no }, "c002: checked nothing: the verdict is not valid"},
		{func(c *schema.CellRecord) { c.CheckerOK = &n0 }, "c002: checked nothing: no operation committed"},
		{func(c *schema.CellRecord) { c.Anomalies, c.CheckerValid, c.CheckerOK = nil, nil, nil }, "c002: checked nothing: no checker result"},
	} {
		c := good
		tc.mod(&c)
		if err := strictVerdict(&scenario.CheckerSpec{Workload: "register", Strict: true}, []schema.CellRecord{c}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", c, err, tc.want)
		}
	}
}
