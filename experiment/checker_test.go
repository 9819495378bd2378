package experiment

import (
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/topology"
)

// TestStrictVerdict: a strict checker fails the scenario run naming the cells with
// anomalies; without strict, or without anomalies, the run is not failed.
func TestStrictVerdict(t *testing.T) {
	n0, n5 := 0, 5
	cells := []CellRecord{{Index: 1, Anomalies: &n5}, {Index: 2, Anomalies: &n0}, {Index: 3}}
	err := strictVerdict(&CheckerSpec{Workload: "register", Strict: true}, cells)
	if err == nil || !strings.Contains(err.Error(), "anomalies in 1 of 3 cells (c001: 5;") {
		t.Fatalf("strict: %v", err)
	}
	if err := strictVerdict(&CheckerSpec{Workload: "register"}, cells); err != nil {
		t.Errorf("not strict: %v", err)
	}
	if err := strictVerdict(&CheckerSpec{Workload: "bank", Strict: true}, cells[1:]); err != nil {
		t.Errorf("strict without anomalies: %v", err)
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
	} {
		var fe *topology.FieldError
		if err := c.s.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a FieldError on %s", c.s, err, c.field)
		}
	}
	if err := (&CheckerSpec{Workload: "bank", Keys: 10, Isolation: "serializable"}).Validate(); err != nil {
		t.Errorf("a valid bank: %v", err)
	}
}
