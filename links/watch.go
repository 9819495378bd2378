package links

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
)

// linkWatchEvery is how often a run re-reads the cluster's standing-links record.
const linkWatchEvery = 200 * time.Millisecond

// Watch records changes of cluster c's standing links from epoch on, until stop.
type Watch struct {
	mu      sync.Mutex
	changes []schema.LinkChange
	err     error
	done    chan struct{}
}

// StartWatch starts a Watch; initial is the record the run started with (nil: none),
// so only changes after the start are recorded.
func StartWatch(ctx context.Context, c *cluster.Cluster, epoch time.Time, initial *Standing) *Watch {
	w := &Watch{done: make(chan struct{})}
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
				w.changes = append(w.changes, schema.LinkChange{AtS: now, Event: "cleared", Request: cur.Request.String(), Backend: cur.Backend})
			}
			if st != nil {
				at := st.Applied.Sub(epoch).Seconds()
				if st.Applied.IsZero() || at > now {
					at = now
				}
				w.changes = append(w.changes, schema.LinkChange{AtS: at, Event: "applied", Request: st.Request.String(), Backend: st.Backend})
			}
			w.mu.Unlock()
			cur = st
		}
	}()
	return w
}

// sameStanding: the same standing record (one apply), whatever its measurement says.
func sameStanding(a, b *Standing) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Applied.Equal(b.Applied) && a.Request.String() == b.Request.String()
}

// Result waits for the watch to end (its context done) and returns the changes.
func (w *Watch) Result() ([]schema.LinkChange, error) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes, w.err
}

// ChangeWarning is the run's warning for changes (empty without any).
func ChangeWarning(changes []schema.LinkChange) string {
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
