package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
)

// LinkChange is a change of a cluster's standing links (`habench netem apply` / `clear`
// from another command) while a run was going on: manifest.json "link_changes". The
// partitions and heals of faults (the run's own schedule or `habench fault`) are not
// link changes but faults (byOthers).
type LinkChange struct {
	// AtS is when it happened in seconds on samples.csv's clock: for "applied" the
	// record's applied time (the impairments took effect about then), for "cleared" when
	// the run noticed the record gone (within linkWatchEvery of the clear).
	AtS float64 `json:"at_s"`
	// Event is "applied" or "cleared".
	Event string `json:"event"`
	// Request is the `habench netem apply` request, e.g. "--partition n3".
	Request string `json:"request"`
	Backend string `json:"backend,omitempty"`
}

// linkWatchEvery is how often a run re-reads the cluster's standing-links record.
const linkWatchEvery = 200 * time.Millisecond

// linkWatch records changes of cluster c's standing links from epoch on, until stop.
type linkWatch struct {
	mu      sync.Mutex
	changes []LinkChange
	err     error
	done    chan struct{}
}

// watchLinks starts a linkWatch; initial is the record the run started with (nil: none),
// so only changes after the start are recorded.
func watchLinks(ctx context.Context, c *cluster.Cluster, epoch time.Time, initial *StandingLinks) *linkWatch {
	w := &linkWatch{done: make(chan struct{})}
	cur := initial
	go func() {
		defer close(w.done)
		t := time.NewTicker(linkWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			st, err := ReadStanding(c)
			if err != nil {
				// A record half-written by another process version, or unreadable:
				// remembered once, the watch goes on.
				w.mu.Lock()
				if w.err == nil {
					w.err = err
				}
				w.mu.Unlock()
				continue
			}
			if sameStanding(cur, st) {
				continue
			}
			now := time.Since(epoch).Seconds()
			w.mu.Lock()
			if cur != nil {
				w.changes = append(w.changes, LinkChange{AtS: now, Event: "cleared", Request: cur.Request.String(), Backend: cur.Backend})
			}
			if st != nil {
				at := st.Applied.Sub(epoch).Seconds()
				if st.Applied.IsZero() || at > now {
					at = now
				}
				w.changes = append(w.changes, LinkChange{AtS: at, Event: "applied", Request: st.Request.String(), Backend: st.Backend})
			}
			w.mu.Unlock()
			cur = st
		}
	}()
	return w
}

// sameStanding: the same standing record (one apply), whatever its measurement says.
func sameStanding(a, b *StandingLinks) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Applied.Equal(b.Applied) && a.Request.String() == b.Request.String()
}

// result waits for the watch to end (its context done) and returns the changes.
func (w *linkWatch) result() ([]LinkChange, error) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes, w.err
}

// linkChangeWarning is the run's warning for changes (empty without any).
func linkChangeWarning(changes []LinkChange) string {
	if len(changes) == 0 {
		return ""
	}
	var parts []string
	for _, c := range changes {
		parts = append(parts, fmt.Sprintf("%s `%s` at %.1f s", c.Event, c.Request, c.AtS))
	}
	return "the cluster's links changed during the run (`habench netem apply`/`clear` from another command; samples.csv's clock): " +
		strings.Join(parts, ", ") + "; TPS, latency and lag include those periods"
}

// faultLinkSlack is how far a link change may lie outside its fault's action (At to
// At + Took, on samples.csv's clock) and still be the fault's: the watch notices a
// clear within linkWatchEvery, later on a loaded host.
const faultLinkSlack = time.Second

// byOthers returns changes without those a partition (applied) or heal (cleared) among
// faults made while it ran: the run's own scenario faults and `habench fault`'s are in
// the manifest's faults and their warning, never links changed "from another command".
func byOthers(changes []LinkChange, faults []RunFault) []LinkChange {
	var out []LinkChange
	for _, c := range changes {
		if !slices.ContainsFunc(faults, func(f RunFault) bool { return madeBy(c, f) }) {
			out = append(out, c)
		}
	}
	return out
}

// madeBy: link change c is fault f's (its FaultAction.LinkEvent, e.g. a partition
// applied or a heal cleared, while f ran).
func madeBy(c LinkChange, f RunFault) bool {
	event := ""
	if a := FaultActionOf(f.Action); a != nil {
		event = a.LinkEvent
	}
	slack := faultLinkSlack.Seconds()
	return event == c.Event && c.AtS >= f.AtS-slack && c.AtS <= f.AtS+f.Took+slack
}
