package workload

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Workload is one sysbench OLTP test (modelled on go-tpc's Workloader).
type Workload interface {
	// Name is the sysbench test name, e.g. "oltp_read_write".
	Name() string
	// Prepare creates the database if missing and tables sbtest1..Tables on
	// Endpoints[0], loads ids 1..TableSize with explicit ids by LOAD DATA LOCAL
	// INFILE of generated rows (multi-row INSERTs where the server's local_infile
	// is OFF, after a NOTE), using up to Threads connections, one table per
	// connection at a time, and creates index k_N after the load, printing sysbench's progress
	// lines to out ("Creating table 'sbtest1'...", "Inserting 10000 records into
	// 'sbtest1'", "Creating a secondary index on 'sbtest1'...").
	Prepare(ctx context.Context, t Target, o Options, out io.Writer) error
	// Run executes events on Threads workers (worker i on Endpoints[i % n])
	// until Time, Events or ctx ends the run, calls r.Interval every
	// ReportInterval (when both are set) and returns the statistics of the
	// measured part (after Warmup). When ctx ends the run early it returns the
	// partial Result and ctx.Err(); on a fatal statement error it returns the
	// partial Result and a *StatementError.
	Run(ctx context.Context, t Target, o Options, r Reporter) (*Result, error)
	// Cleanup drops sbtest1..Tables on Endpoints[0], printing
	// "Dropping table 'sbtestN'..." for each.
	Cleanup(ctx context.Context, t Target, o Options, out io.Writer) error
}

// registered holds every workload, in registration order (see register).
var registered []Workload

// register adds a workload; each workload's file calls it from init. The order of
// Names is the order of registration, stable for a given build.
func register(w Workload) { registered = append(registered, w) }

// Names returns the known workload names in a stable order.
func Names() []string {
	n := make([]string, len(registered))
	for i, w := range registered {
		n[i] = w.Name()
	}
	return n
}

// Lookup returns the workload called name (a sysbench test name such as
// "oltp_read_write"); the error lists the known names.
func Lookup(name string) (Workload, error) {
	for _, w := range registered {
		if w.Name() == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("unknown workload %q: known workloads are %s", name, strings.Join(Names(), ", "))
}

// eventSource is a workload's part of a run: the statements every connection uses and
// what one event does. The generic runner owns everything else: the run's life
// (runner.go), the workers' loops, retries and reconnects (worker.go), client failover
// (failover.go), hangs (hang.go), arrivals under --rate (rate.go), warm-up, statistics and
// reports (harvest.go, stats.go, report.go). A new workload is
// one file with a Workload whose Run calls runEvents with its eventSource.
type eventSource interface {
	// statements returns the statement texts a connection uses, by index (the index
	// Conn.Read and Conn.Write take); in ps mode each non-empty one is prepared on
	// every (re)connect, "" entries are never prepared.
	statements() []string
	// newEvents returns worker id's private event state (its random generators and
	// buffers); it is only used from that worker's goroutine.
	newEvents(id int) eventer
	// autocommits reports whether the events run their writes without a transaction
	// (each write commits on its own): a write whose connection is lost then has an
	// unknown outcome (runner.mayHaveCommitted), as a lost COMMIT has.
	autocommits() bool
}

// eventFinisher is an eventer with work left when its worker stops (bulk_insert's
// pending rows): the runner calls finish once, on the worker's connection, when the run
// ends normally; a failure ends the run with that error like a failed event.
type eventFinisher interface {
	finish(c *Conn) error
}

// eventer runs the events of one worker.
type eventer interface {
	// event runs one event (one transaction, or one statement without a transaction)
	// on c. A statement failure is returned as the *StatementError Conn returns, so
	// that the runner can retry it, reconnect or end the run.
	event(c *Conn) error
}
