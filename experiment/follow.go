package experiment

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/workload"
)

// errNoLiveWriter is FollowWriter's answer while the cluster names no writer live (a group
// during an election): the workers stay where they are until it names one.
var errNoLiveWriter = errors.New("the cluster names no writer now")

// FollowWriter returns a workload.Target.Follow for the sandbox called name: the node
// that takes writes now (cluster.LiveWriter on the cluster reloaded from its state, so a
// promote is seen), as an endpoint like ClusterTarget's, cached for 200 ms. While the
// cluster names no writer live (a group's election: no member calls itself PRIMARY while
// it sees a majority ONLINE) it returns errNoLiveWriter, never the recorded writer: a
// worker on the new primary must not be sent back to a partitioned old one, nor a hung
// transaction abandoned for it (workload's hang watchdog acts only on an answer).
func FollowWriter(sb *cluster.Store, name string) func(ctx context.Context) (workload.Endpoint, error) {
	var mu sync.Mutex
	var last workload.Endpoint
	var lastErr error
	var at time.Time
	return func(ctx context.Context) (workload.Endpoint, error) {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < 200*time.Millisecond {
			return last, lastErr
		}
		c, err := sb.Load(name)
		if err != nil {
			return last, err
		}
		at = time.Now()
		n := c.LiveWriter(ctx)
		if n == nil {
			lastErr = errNoLiveWriter
			return last, lastErr
		}
		last, lastErr = workload.Endpoint{Name: n.Name, Host: n.Host, Port: n.Port}, nil
		return last, nil
	}
}
