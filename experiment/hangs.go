package experiment

import (
	"context"
	"fmt"
	"github.com/habench/habench/schema"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/workload"
)

// hangSummary fills s's unknown outcomes, waits and writer moves from r.
func hangSummary(s *schema.Summary, r *workload.Result) {
	s.UnknownOutcome, s.Waits = r.Unknown, r.WaitCount
	if len(r.Waits) > 0 {
		w := r.Waits[0]
		s.LongestWait = &schema.WaitSummary{Node: w.Endpoint, StartS: w.At.Seconds(), WaitedS: w.Waited.Seconds(), Abandoned: w.Abandoned}
	}
	for _, m := range r.WriterMoves {
		ms := schema.MoveSummary{From: m.From, To: m.To, AtS: m.At.Sub(r.StartedAt).Seconds(), Workers: m.Workers, Abandoned: m.Abandoned}
		if !m.FirstCommit.IsZero() {
			v := m.FirstCommit.Sub(r.StartedAt).Seconds()
			ms.FirstCommitS = &v
		}
		if !m.Settled.IsZero() {
			v := m.Settled.Sub(r.StartedAt).Seconds()
			ms.SettledS = &v
		}
		s.WriterMoves = append(s.WriterMoves, ms)
	}
}

// writerPoll is how often a run asks the cluster which node takes writes (watchWriters).
const writerPoll = 500 * time.Millisecond

// writerSeen is the writer the cluster named from At on (the answer's time). After is
// when the last poll before it that named a writer was asked: the change to Node happened
// after it (the zero time for the first).
type writerSeen struct {
	At    time.Time
	After time.Time
	Node  string
}

// writerWatch records the cluster's live writer during a run (cluster.LiveWriter: a
// group's PRIMARY that sees a majority ONLINE, a promoted source), its changes only.
type writerWatch struct {
	mu    sync.Mutex
	seen  []writerSeen
	asked time.Time // when the latest poll that named a writer was asked
}

// watchWriters polls c's live writer every writerPoll until ctx ends; nil for kinds
// without a single writer (Galera, multi-primary groups).
func watchWriters(ctx context.Context, c *cluster.Cluster, wg *sync.WaitGroup) *writerWatch {
	if c == nil || scenario.CanFollow(c.Spec) != "" {
		return nil
	}
	w := &writerWatch{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(writerPoll)
		defer tk.Stop()
		for {
			w.poll(ctx, c)
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	return w
}

// poll asks c's live writer once and records it when it changed. Its asked time is taken
// before the state file is read: on an async kind the writer is the one the file names
// when read, so a change named by a later poll happened after that time.
func (w *writerWatch) poll(ctx context.Context, c *cluster.Cluster) {
	asked := time.Now()
	cur := c
	if c.Dir() != "" && c.Deployed() {
		if r, err := c.Reload(); err == nil {
			cur = r // a promote is in the state file (habench set the roles)
		}
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	n := cur.LiveWriter(qctx)
	cancel()
	if n == nil || ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	if len(w.seen) == 0 || w.seen[len(w.seen)-1].Node != n.Name {
		w.seen = append(w.seen, writerSeen{At: time.Now(), After: w.asked, Node: n.Name})
	}
	w.asked = asked
	w.mu.Unlock()
}

// lastAsked is when the latest poll that named a writer was asked (the zero time: none
// did, or a nil watch).
func (w *writerWatch) lastAsked() time.Time {
	if w == nil {
		return time.Time{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.asked
}

// changes returns the writers seen, in order (nil for a nil watch).
func (w *writerWatch) changes() []writerSeen {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]writerSeen(nil), w.seen...)
}

// setFailover gives each fault that a change of writer followed its NewWriter, NewWriterS
// (seconds from the fault until the cluster named the new writer) and ClientWriterS (until
// the workers' first commit there, from moves; nil when they did not commit there). A
// change is the earliest fault's since the previous change (a heal after a partition does
// not take the partition's election), except that a step of a rolling restart that
// switched the writes to the new writer (schema.FaultRecord.Of, a promote of that node) takes it
// from the restarts before it.
func setFailover(fs []schema.FaultSummary, faults []schema.RunFault, seen []writerSeen, moves []workload.WriterMove) {
	for k := 1; k < len(seen); k++ {
		ch := seen[k]
		i := -1
		for j, f := range faults {
			if f.At.After(seen[k-1].At) && !f.At.After(ch.At) {
				if i < 0 {
					i = j
				}
				if f.Of != "" && f.Action == "promote" && f.Node == ch.Node {
					i = j // a planned switchover (a rolling restart's): the change is its
					break
				}
			}
		}
		if i < 0 || i >= len(fs) || fs[i].NewWriter != "" {
			continue
		}
		at := faults[i].At
		d := ch.At.Sub(at).Seconds()
		fs[i].NewWriter, fs[i].NewWriterS = ch.Node, &d
		for _, m := range moves {
			if m.To == ch.Node && !m.At.Before(at) && !m.FirstCommit.IsZero() {
				c := m.FirstCommit.Sub(at).Seconds()
				fs[i].ClientWriterS = &c
				if c < d {
					// The poll is an upper bound (every 0.5 s, answered within 2 s): the
					// workers' first commit there proves the cluster had named it by then.
					*fs[i].NewWriterS = c
				}
				break
			}
		}
	}
}

// failoverWarnings are the WARNINGs about writers the cluster named during the run that
// the workers never committed on: with fixed workers (follow false) they stayed on nodes;
// following ones did not get there by the end. epoch is samples.csv's zero.
func failoverWarnings(seen []writerSeen, moves []workload.WriterMove, follow bool, nodes []string, epoch time.Time) []string {
	var out []string
	for k := 1; k < len(seen); k++ {
		ch := seen[k]
		if !follow {
			out = append(out, fmt.Sprintf("the cluster had a new writer, %s, from %.1f s (samples.csv's clock) while the workers stayed on %s (writer fixed): their numbers are the old writer's",
				ch.Node, ch.At.Sub(epoch).Seconds(), strings.Join(nodes, ", ")))
			continue
		}
		committed := false
		for _, m := range moves {
			committed = committed || (m.To == ch.Node && !m.FirstCommit.IsZero() && !m.FirstCommit.Before(seen[k-1].At))
		}
		if !committed && (k+1 == len(seen)) {
			out = append(out, fmt.Sprintf("the cluster had a new writer, %s, from %.1f s (samples.csv's clock) but the workers never committed there by the end of the run",
				ch.Node, ch.At.Sub(epoch).Seconds()))
		}
	}
	return out
}

// failover fills the faults' failover times from the writers seen and the workers' moves,
// and warns about new writers the workers did not commit on.
func (st *runState) failover(sum *schema.Summary) {
	seen := st.writers.changes()
	var moves []workload.WriterMove
	if st.result != nil {
		moves = st.result.WriterMoves
	}
	setFailover(sum.Faults, st.man.Faults, seen, moves)
	if st.b.Via == scenario.ViaProxy {
		return // the proxy picks the node: the workers' nodes are not known (the Failover timeline has the proxy's)
	}
	var nodes []string
	for _, ep := range st.b.Target.Endpoints {
		nodes = append(nodes, ep.Label())
	}
	for _, w := range failoverWarnings(seen, moves, st.b.Target.Follow != nil, nodes, st.sampleStart) {
		st.warn(w, "new writer", "detail", w)
	}
}
