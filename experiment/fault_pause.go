package experiment

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// pause and resume: SIGSTOP of the node's server (it keeps its connections and its place
// in the topology but does nothing: a stall, not a crash) and SIGCONT. With duration, pause
// sends SIGCONT itself that long after SIGSTOP (also when the run is interrupted meanwhile),
// and the record's took_s covers the stall.
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "pause",
			Aux:   true,
			Order: 80,
			Help: "SIGSTOP of the node's server: a stall (connections open, nothing answered), until resume\n" +
				"or, with duration=D, SIGCONT D later (the fault took D)",
			Past:          "paused",
			Params:        []scenario.FaultParam{scenario.DurationParam("duration", "how long the server stays stopped before SIGCONT (e.g. 2s); none: until resume")},
			CheckSchedule: checkPauseSchedule,
		},
		Ops:      []cluster.Op{cluster.OpSignalNode},
		Inject:   injectPause,
		CaughtUp: CaughtUpAfterAction,
		Disrupts: DisruptsNode,
	})
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "resume",
			Aux:   true,
			Order: 90,
			Help:  "SIGCONT of a paused server",
			Past:  "resumed",
		},
		Ops: []cluster.Op{cluster.OpSignalNode},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
			if err := c.SignalNode(ctx, in.Store, n, "CONT"); err != nil {
				return "", err
			}
			in.notePaused(c, n, false)
			return "", nil
		},
		CaughtUp: CaughtUpAfterAction,
	})
}

// checkPauseSchedule refuses a pause without duration that no later resume of the same
// node ends: the run would leave the server stopped.
func checkPauseSchedule(events []scenario.FaultEvent, i int) (string, string) {
	if events[i].Args.Duration("duration") > 0 {
		return "", ""
	}
	for _, e := range events[i+1:] {
		if e.Action == "resume" && e.Node == events[i].Node {
			return "", ""
		}
	}
	return "duration", fmt.Sprintf("a pause of %s without duration needs a later resume of %s in faults (or duration: 2s)", events[i].Node, events[i].Node)
}

// injectPause sends SIGSTOP to n's server and, with a duration, SIGCONT that long after
// (never left stopped: the SIGCONT is sent also when ctx ends first). Without a duration
// the node is noted as paused in the injector (ResumePaused sends it SIGCONT when the run
// ends before its resume). A SIGSTOP that reports an error is followed by a best-effort
// SIGCONT (the signal may have reached the server all the same).
func injectPause(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, args scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
	if err := c.SignalNode(ctx, in.Store, n, "STOP"); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resumeTimeout)
		defer cancel()
		_ = c.SignalNode(cctx, in.Store, n, "CONT")
		return "", err
	}
	d := args.Duration("duration")
	if d <= 0 {
		in.notePaused(c, n, true)
		return "stopped until resume", nil
	}
	from := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	if err := c.SignalNode(context.WithoutCancel(ctx), in.Store, n, "CONT"); err != nil {
		return "", fmt.Errorf("SIGCONT after %.2f s: %w", time.Since(from).Seconds(), err)
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("resumed after %.2f s of %v: %w", time.Since(from).Seconds(), d, ctx.Err())
	}
	return fmt.Sprintf("SIGCONT %.2f s after SIGSTOP", time.Since(from).Seconds()), nil
}

// resumeTimeout bounds a SIGCONT sent when cleaning up (after a failed SIGSTOP, at the
// end of a run).
const resumeTimeout = 30 * time.Second

// pausedNodes are the nodes an injector paused without duration and has not resumed.
type pausedNodes struct {
	mu    sync.Mutex
	nodes map[*cluster.Node]*cluster.Cluster
}

// pausedMu guards the creation of Injector.paused.
var pausedMu sync.Mutex

// notePaused notes n of c as paused (on true) or resumed.
func (in *Injector) notePaused(c *cluster.Cluster, n *cluster.Node, paused bool) {
	pausedMu.Lock()
	if in.paused == nil {
		in.paused = &pausedNodes{nodes: map[*cluster.Node]*cluster.Cluster{}}
	}
	p := in.paused
	pausedMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if paused {
		p.nodes[n] = c
	} else {
		delete(p.nodes, n)
	}
}

// ResumePaused sends SIGCONT to every node this injector paused without duration and did
// not resume (a run that ended before its scheduled resume, or whose resume failed),
// under ctx's values but not its cancellation, each bounded by 30 s. It returns one
// warning per node resumed so, or per SIGCONT that failed (naming the node).
func (in *Injector) ResumePaused(ctx context.Context) []string {
	pausedMu.Lock()
	p := in.paused
	pausedMu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var warnings []string
	for n, c := range p.nodes {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resumeTimeout)
		err := c.SignalNode(cctx, in.Store, n, "CONT")
		cancel()
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s was left paused (SIGSTOP) and SIGCONT at the end of the run failed: %v", n.Name, err))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s was still paused when the run ended: habench sent it SIGCONT", n.Name))
		delete(p.nodes, n)
	}
	sort.Strings(warnings)
	return warnings
}
