package scenario

import (
	"errors"
	"fmt"
	"strings"

	"github.com/habench/habench/checker"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// CheckerSpec is a checker workload run beside the benchmark (a scenario's `checker:`
// section, experiment.Bench.Checker): its own table and sessions on the cluster's writable nodes, every
// operation recorded in the run's history (history.jsonl, history.edn) and checked after
// the run (summary.json "checks", report.md "Anomalies").
type CheckerSpec struct {
	// Workload is the checker workload: "register" (read-then-write transactions on a
	// few keys; check: lost updates, P4) or "bank" (transfers and reads of every
	// balance; check: the total never changes, no negative balance) or "list-append"
	// (transactions of appends and reads of lists; checks: CheckListAppend's, Elle's).
	Workload string `yaml:"workload"`
	// Threads (default 2) and Keys (registers or lists in use, default 4; bank accounts, default 5) size
	// it; Locking "" or "for-update" and Isolation (READ-COMMITTED, REPEATABLE-READ,
	// SERIALIZABLE ...; default the server's) are its reads and sessions.
	Threads   int    `yaml:"threads"`
	Keys      int    `yaml:"keys"`
	Locking   string `yaml:"locking"`
	Isolation string `yaml:"isolation"`
	// Strict makes anomalies fail the scenario run (exit 1, after every cell ran and
	// its results were written); without it they are warnings.
	Strict bool `yaml:"strict"`
	// Rate caps its transactions per second, all its sessions together (0: as fast as they
	// go): a bound on what the checker takes from the benchmark beside it.
	Rate float64 `yaml:"rate"`
	// Realtime (list-append only) checks strict serializability: a transaction
	// acknowledged before another began must precede it, so stale reads across sessions
	// and nodes are anomalies too (checker.CheckListAppendRealtime: G-single-realtime ...).
	Realtime bool `yaml:"realtime"`
	// ReadNodes (node names, or a mapping of topology name to node names) run the
	// read-only transactions (list-append's reads-only transactions, bank's reads of
	// every balance), session i's on the i-th mod len; writes stay on the writable
	// nodes. Each operation records its node; stale reads there show as read-your-writes
	// and monotonic-read anomalies (list-append). Not for register (no read-only
	// transactions).
	ReadNodes CheckerReadNodes `yaml:"read_nodes"`
}

// RegisterOptions is the register checker's options of s (threads default 2, the
// checker's own defaults for the rest).
func (s *CheckerSpec) RegisterOptions() checker.RegisterOptions {
	th := s.Threads
	if th == 0 {
		th = 2
	}
	return checker.RegisterOptions{Keys: s.Keys, Threads: th, Locking: s.Locking, Isolation: s.Isolation, Rate: s.Rate}.WithDefaults()
}

// ListAppendOptions is the list-append checker's options of s (defaults as
// RegisterOptions'; Keys are lists).
func (s *CheckerSpec) ListAppendOptions() checker.ListAppendOptions {
	r := s.RegisterOptions()
	return checker.ListAppendOptions{Keys: s.Keys, Threads: r.Threads, Isolation: r.Isolation, Rate: r.Rate}
}

// BankOptions is the bank checker's options of s (defaults as RegisterOptions'; Keys are
// accounts).
func (s *CheckerSpec) BankOptions() checker.BankOptions {
	r := s.RegisterOptions()
	return checker.BankOptions{Accounts: s.Keys, Threads: r.Threads, Locking: r.Locking, Isolation: r.Isolation, Rate: r.Rate}
}

// BankAccounts is the bank's account count (Keys, default 5).
func (s *CheckerSpec) BankAccounts() int {
	if s.Keys == 0 {
		return 5
	}
	return s.Keys
}

// Validate checks s: a known workload and valid options, as a *topology.FieldError on
// checker.<key>.
func (s *CheckerSpec) Validate() error {
	if s.Workload != "register" && s.Workload != "bank" && s.Workload != "list-append" {
		return &topology.FieldError{Field: "checker.workload", Value: s.Workload, Reason: "want register, bank or list-append"}
	}
	if s.Realtime && s.Workload != "list-append" {
		return &topology.FieldError{Field: "checker.realtime", Value: "true", Reason: "only the list-append checker has a realtime order check"}
	}
	keys := checker.RegisterOptions{Keys: s.Keys}.Validate()
	if s.Workload == "bank" {
		keys = checker.BankOptions{Accounts: s.Keys}.Validate()
	}
	for _, f := range []struct {
		field, value string
		err          error
	}{
		{"checker.threads", fmt.Sprint(s.Threads), checker.RegisterOptions{Threads: s.Threads}.Validate()},
		{"checker.keys", fmt.Sprint(s.Keys), keys},
		{"checker.locking", s.Locking, checker.RegisterOptions{Locking: s.Locking}.Validate()},
		{"checker.isolation", s.Isolation, checker.RegisterOptions{Isolation: s.Isolation}.Validate()},
		{"checker.rate", fmt.Sprint(s.Rate), checker.RegisterOptions{Rate: s.Rate}.Validate()},
		{"checker.read_nodes", s.Workload, s.readNodesFit()},
	} {
		if f.err != nil {
			_, reason, _ := strings.Cut(f.err.Error(), ": ")
			return &topology.FieldError{Field: f.field, Value: f.value, Reason: reason}
		}
	}
	return nil
}

// readNodesFit is an error ("register: reason") when s has read nodes and its workload has
// no read-only transactions (register).
func (s *CheckerSpec) readNodesFit() error {
	if s.Workload == "register" && (len(s.ReadNodes.All) > 0 || len(s.ReadNodes.ByTopology) > 0) {
		return errors.New("register: the register workload has no read-only transactions (want bank or list-append)")
	}
	return nil
}

// PlanLine is the dry run's line for the checker, e.g. "checker register beside the
// workload, every cell: 2 threads on the writable nodes, 4 keys, plain reads, isolation
// REPEATABLE-READ (history.jsonl, history.edn; checks: lost updates)".
func (s *CheckerSpec) PlanLine() string {
	o := s.RegisterOptions()
	keys, checks := fmt.Sprintf("%d keys", o.Keys), "lost updates"
	switch s.Workload {
	case "bank":
		keys, checks = fmt.Sprintf("%d accounts", s.BankAccounts()), "the bank total, negative balances"
	case "list-append":
		keys, checks = fmt.Sprintf("%d lists", o.Keys), "G0, G1a, G1b, G1c, G-single, G2-item, lost appends, session guarantees"
	}
	reads, iso := "plain reads", "the server's default isolation"
	if o.Locking == "for-update" {
		reads = "SELECT ... FOR UPDATE"
	}
	if o.Isolation != "" {
		iso = "isolation " + o.Isolation
	}
	return fmt.Sprintf("checker %s beside the workload, every cell: %d threads on the writable nodes, %s, %s, %s (%s, %s; checks: %s)",
		s.Workload, o.Threads, keys, reads, iso, schema.HistoryFile, schema.HistoryEDNFile, checks)
}
