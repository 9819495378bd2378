package experiment

import (
	"context"
	"fmt"
	"time"

	"github.com/habench/habench/cluster"
)

// pause and resume: SIGSTOP of the node's server (it keeps its connections and its place
// in the topology but does nothing: a stall, not a crash) and SIGCONT. With duration, pause
// sends SIGCONT itself that long after SIGSTOP (also when the run is interrupted meanwhile),
// and the record's took_s covers the stall.
func init() {
	RegisterFaultAction(FaultAction{
		Name:  "pause",
		Order: 80,
		Help: "SIGSTOP of the node's server: a stall (connections open, nothing answered), until resume\n" +
			"or, with duration=D, SIGCONT D later (the fault took D)",
		Past:     "paused",
		Params:   []FaultParam{DurationParam("duration", "how long the server stays stopped before SIGCONT (e.g. 2s); none: until resume")},
		Ops:      []cluster.Op{cluster.OpSignalNode},
		Inject:   injectPause,
		CaughtUp: CaughtUpAfterAction,
	})
	RegisterFaultAction(FaultAction{
		Name:  "resume",
		Order: 90,
		Help:  "SIGCONT of a paused server",
		Past:  "resumed",
		Ops:   []cluster.Op{cluster.OpSignalNode},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ FaultArgs, _ *FaultRecord) (string, error) {
			return "", c.SignalNode(ctx, in.Sandbox, n, "CONT")
		},
		CaughtUp: CaughtUpAfterAction,
	})
}

// injectPause sends SIGSTOP to n's server and, with a duration, SIGCONT that long after
// (never left stopped: the SIGCONT is sent also when ctx ends first).
func injectPause(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, args FaultArgs, _ *FaultRecord) (string, error) {
	if err := c.SignalNode(ctx, in.Sandbox, n, "STOP"); err != nil {
		return "", err
	}
	d := args.Duration("duration")
	if d <= 0 {
		return "stopped until resume", nil
	}
	from := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	if err := c.SignalNode(context.WithoutCancel(ctx), in.Sandbox, n, "CONT"); err != nil {
		return "", fmt.Errorf("SIGCONT after %.2f s: %w", time.Since(from).Seconds(), err)
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("resumed after %.2f s of %v: %w", time.Since(from).Seconds(), d, ctx.Err())
	}
	return fmt.Sprintf("SIGCONT %.2f s after SIGSTOP", time.Since(from).Seconds()), nil
}
