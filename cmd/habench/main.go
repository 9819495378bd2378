// Command habench benchmarks MySQL high-availability topologies side by side: it deploys
// a topology, runs sysbench-compatible workloads, samples every node's lag and flow
// control each second, and writes results and reports.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// version is set with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(run()) }

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the experiment or an operation failed
	exitUsage   = 2 // bad input: flags, arguments, spec fields
	// exitInterrupted follows the shell convention for SIGINT (128+2); whatever was
	// deployed by the interrupted command has been removed, results so far are written.
	exitInterrupted = 130
)

// usageError marks bad input (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// interruptContext returns a context cancelled by the first SIGINT or SIGTERM, which says
// so on stderr (cleanup follows; interrupt again to skip it); a second one exits at once
// (130) without cleanup, naming the sandboxes this process leaves. Both signals are caught
// by one channel registered before anything runs, with room for two. A second signal that
// arrives before the first was taken is one signal with it (the kernel's and Go's pending
// sets hold one of each): the line says when the next one counts.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		fmt.Fprintln(os.Stderr, "habench: interrupted: cleaning up (interrupt again to exit at once without cleanup)")
		cancel()
		<-ch
		msg := "habench: second signal, exiting without cleanup"
		if names, dir := cluster.LeftByThisProcess(); len(names) > 0 {
			msg += fmt.Sprintf("; left running: %s (remove: habench --state-dir %s destroy %s)", strings.Join(names, ", "), dir, strings.Join(names, " "))
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

func run() int {
	ctx, stop := interruptContext()
	defer stop()
	// SSH master connections to users' hosts end with the command.
	defer host.CloseAll()
	setHabenchBinary()
	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	// One line, whatever the error: joined per-node errors are separated by "; ".
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "habench: interrupted:", msg)
		return exitInterrupted
	}
	fmt.Fprintln(os.Stderr, "habench: error:", msg)
	var fe *topology.FieldError
	var ue usageError
	if errors.As(err, &fe) || errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}
