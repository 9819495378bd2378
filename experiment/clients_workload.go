package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/habench/habench/clients"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// ClientsWorkload is a workload run from client hosts (clients.Run) in place of this
// process's engine: the run's reporter gets the merged intervals, its Result is the merged
// one, and Outcome keeps the clients' rows and the lost clients for the results.
type ClientsWorkload struct {
	workload.Workload
	c *ClientHosts
	// out receives a line per client after each run and the runs' notes; nil: none.
	out     io.Writer
	outcome *clients.Outcome
}

// Workload returns wl run from the clients; out (nil: none) receives a line per client
// after each run, before the summary, and notes as the run goes.
func (c *ClientHosts) Workload(wl workload.Workload, out io.Writer) *ClientsWorkload {
	return &ClientsWorkload{Workload: wl, c: c, out: out}
}

// Outcome is the last run's merge (nil before a run, or when no client measured anything).
func (w *ClientsWorkload) Outcome() *clients.Outcome { return w.outcome }

// Run implements workload.Workload: refused (CheckTarget) for a target the clients cannot
// run; without Clients.Bin, habench is copied to a fresh directory on every client host
// first (removed after the run, whatever its end, and by each client as it exits: after a
// kill -9 of this process too); then clients.Run. Its error is clients.Run's (a lost
// client: a clients.LostClient) or the copy's.
func (w *ClientsWorkload) Run(ctx context.Context, t workload.Target, o workload.Options, rep workload.Reporter) (*workload.Result, error) {
	w.outcome = nil
	if err := w.c.CheckTarget(t); err != nil {
		return nil, err
	}
	t.Dial = nil // the clients dial the servers themselves
	dirs, bins, err := w.c.copyTo(ctx)
	defer w.c.remove(dirs)
	if err != nil {
		return nil, err
	}
	cfg := clients.Config{Clients: w.c.spec.Hosts, Runner: w.c.runner(bins), Version: Version, Workload: w.Name(), Options: o, Target: t,
		Reporter: rep, Dirs: dirs, Offsets: w.c.offsets(), Note: func(line string) { w.printf("NOTE: %s\n", line) }}
	if sr, ok := rep.(workload.StartReporter); ok {
		sr.Started()
	}
	out, err := clients.Run(ctx, cfg)
	w.outcome = out
	if out == nil {
		return nil, err
	}
	if w.out != nil {
		PrintClients(w.out, out)
	}
	return out.Result, err
}

// printf writes to w.out, if any.
func (w *ClientsWorkload) printf(format string, a ...any) {
	if w.out != nil {
		fmt.Fprintf(w.out, format, a...)
	}
}

// copyTo copies this habench to a fresh directory on every client host at once
// (cluster.CopySelfToTemp) and returns the directories and the copies, by client; with
// Clients.Bin, nothing (nil maps). On an error the directories made are returned with it
// (the caller removes them: remove) and the error is the first client's, naming it.
func (c *ClientHosts) copyTo(ctx context.Context) (dirs, bins map[string]string, err error) {
	if c.spec.Bin != "" {
		return nil, nil, nil
	}
	dirs, bins = map[string]string{}, map[string]string{}
	var mu sync.Mutex
	err = c.each(func(n string) error {
		dir, bin, err := cluster.CopySelfToTemp(ctx, c.hosts[n], c.exe, clients.CopyDirTemplate, c.field)
		var fe *topology.FieldError
		if err != nil && !errors.As(err, &fe) {
			return fmt.Errorf("%s: client %s: %w", c.field, n, err)
		}
		if err != nil {
			return err
		}
		mu.Lock()
		dirs[n], bins[n] = dir, bin
		mu.Unlock()
		c.log.Debug("habench copied to a client", "client", n, "dir", dir)
		return nil
	})
	return dirs, bins, err
}

// remove removes the directories copyTo made (each client removes its own when it ends;
// this covers a client killed on its host, or a run that never started), with its own
// time limit (30 s) whatever the run's context. Errors are written to c.out as
// warnings naming the client.
func (c *ClientHosts) remove(dirs map[string]string) {
	if len(dirs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for n, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := clients.CheckCopyDir(dir)
			if err == nil {
				err = cluster.RemoveSelfCopy(ctx, c.hosts[n], dir)
			}
			if err == nil {
				c.log.Debug("habench's copy removed from a client", "client", n, "dir", dir)
			}
			if err != nil && c.out != nil {
				c.lock(func() { fmt.Fprintf(c.out, "WARNING: client %s: habench's copy: %v\n", n, err) })
			}
		}()
	}
	wg.Wait()
}

// PrintClients prints a line per client of out (a lost client's marked); the lost clients
// and the client-CPU warning are the run's warnings (lostClients, clientBound).
func PrintClients(w io.Writer, out *clients.Outcome) {
	fmt.Fprintln(w, "\nClients:")
	for _, c := range out.Clients {
		mark := ""
		if c.Partial {
			mark = "  (lost mid-run: its data until then)"
		}
		fmt.Fprintf(w, "    %-20s threads: %d  transactions: %d (%.2f per sec.)  95th pct: %.2f ms  99th pct: %.2f ms  CPU: %.2f of %d%s\n",
			c.Client, c.Threads, c.Transactions, c.TPS, c.LatencyP95, c.LatencyP99, c.CPUCores, c.CPUs, mark)
	}
	fmt.Fprintln(w)
}

// lostClients are the warnings of the clients wl (a *ClientsWorkload) lost in its last
// run, each naming the client and the time; nil for another workload.
func lostClients(wl workload.Workload) []string {
	cw, ok := wl.(*ClientsWorkload)
	if !ok || cw.Outcome() == nil {
		return nil
	}
	var out []string
	for _, l := range cw.Outcome().Lost {
		out = append(out, l.Error())
	}
	return out
}

// clientRows are summary.json "clients" of wl's last run (nil unless wl is a
// *ClientsWorkload that measured something).
func clientRows(wl workload.Workload) []schema.ClientSummary {
	cw, ok := wl.(*ClientsWorkload)
	if !ok || cw.Outcome() == nil {
		return nil
	}
	lost := map[string]string{}
	for _, l := range cw.Outcome().Lost {
		lost[l.Client] = l.Error()
	}
	var rows []schema.ClientSummary
	for _, c := range cw.Outcome().Clients {
		r := schema.ClientSummary{Client: c.Client, Threads: c.Threads, Transactions: c.Transactions, TPS: c.TPS,
			LatencyP95Ms: c.LatencyP95, LatencyP99Ms: c.LatencyP99, CPUCores: c.CPUCores, CPUs: c.CPUs, CPUBound: c.Bound}
		if c.Partial {
			r.Lost = lost[c.Client]
			if r.Lost == "" {
				r.Lost = "its run ended without a result: its data until then"
			}
		}
		rows = append(rows, r)
	}
	return rows
}
