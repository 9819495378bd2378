package checker

import (
	"strings"
	"testing"

	"github.com/habench/habench/history"
)

// TestBankWrongTotal: a committed read of all three accounts summing to 290, not 300,
// and one seeing a negative balance are found; the transfer's own reads are not a total.
func TestBankWrongTotal(t *testing.T) {
	ops := history.Sorted([]history.Op{
		op(0, 10, 20, history.OK, history.R(1, 100), history.R(2, 100), history.W(1, 95), history.W(2, 105)),
		op(1, 30, 40, history.OK, history.R(1, 95), history.R(2, 105), history.R(3, 90)),
		op(2, 50, 60, history.OK, history.R(1, -5), history.R(2, 205), history.R(3, 100)),
	})
	v := CheckBank(ops, 3, 300)
	if v.Valid || len(v.Anomalies) != 2 {
		t.Fatalf("verdict %+v, want a wrong total and a negative balance", v)
	}
	a := v.Anomalies[0]
	if a.Type != "wrong-total" || a.Version != 290 || a.Ops[0].Index != 1 ||
		!strings.Contains(a.Explanation, "T1 (process 1 on n1) read every balance {1: 95, 2: 105, 3: 90}, summing to 290, not 300") {
		t.Errorf("first anomaly %+v", a)
	}
	if b := v.Anomalies[1]; b.Type != "negative-balance" || b.Key != 1 || b.Version != -5 {
		t.Errorf("second anomaly %+v", b)
	}
}

// TestBankCleanPasses: transfers and reads that keep the total, and a failed read with a
// wrong sum (not committed), pass.
func TestBankCleanPasses(t *testing.T) {
	ops := history.Sorted([]history.Op{
		op(0, 10, 20, history.OK, history.R(1, 100), history.R(2, 100), history.W(1, 95), history.W(2, 105)),
		op(1, 30, 40, history.OK, history.R(1, 95), history.R(2, 105), history.R(3, 100)),
		op(2, 30, 40, history.Fail, history.R(1, 1), history.R(2, 1), history.R(3, 1)),
		op(3, 30, 40, history.Unknown, history.R(1, 2), history.W(1, 1)),
	})
	if v := CheckBank(ops, 3, 300); !v.Valid || v.OK != 2 || v.Failed != 1 || v.Unknown != 1 {
		t.Fatalf("verdict %+v, want valid with 2 ok, 1 failed, 1 unknown", v)
	}
}

// TestBankOptionsRefused: bad options name the field and the value.
func TestBankOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		o    BankOptions
		want string
	}{
		{BankOptions{Accounts: 1}, "bank accounts 1: want 2..100"},
		{BankOptions{Threads: -1}, "bank threads -1"},
		{BankOptions{Isolation: "SNAPSHOT"}, `bank isolation "SNAPSHOT"`},
		{BankOptions{Locking: "share"}, `bank locking "share"`},
	} {
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
