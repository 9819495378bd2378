package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// rolling-restart: every node in turn, the action's node last (normally `writer`), each
// stopped cleanly (a group member after a planned leave, STOP GROUP_REPLICATION, as the
// MySQL manual's rolling upgrade does: cluster.LeaveGroup), started and waited for until
// the whole topology is ready again
// (cluster.WaitTopologyReady: replicas replicating, members ONLINE, Galera nodes Synced)
// before the next. When the last node is the writer of a kind that has a switchover, the
// first node restarted takes the writes first: promote on async and semi-sync, the group
// primary changed with group_replication_set_as_primary() on a single-primary group;
// Galera and multi-primary groups just restart their writer last. Each restart and the
// switchover is a fault record of its own in faults.jsonl (Of "rolling-restart"), so a
// run measures each one's outage, recovery and writer change.
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "rolling-restart",
			Order: 45,
			Help: "restart every node in turn, NODE last (writer: the writer last, after a switchover to the\n" +
				"first node restarted: promote on async/semi-sync, a new group primary on single-primary\n" +
				"groups), each waited for until the topology is ready again before the next",
			Past:   "rolling-restarted",
			Params: []scenario.FaultParam{scenario.DurationParam("timeout", "how long to wait for the topology to be ready after each node's start (default 5m)")},
			Steps:  true,
		},
		Ops:      []cluster.Op{cluster.OpStopNode, cluster.OpStartNode},
		Inject:   injectRollingRestart,
		CaughtUp: CaughtUpAfterAction,
		Disrupts: DisruptsEvery,
	})
}

// rollingStep is one node's restart within a rolling restart.
type rollingStep struct {
	node       string
	downS, upS float64 // stop's duration (the leave included); from the stop to the topology ready again
	leave      string  // why a group member did not leave its group before its stop ("": it did, or no group)
}

// injectRollingRestart restarts every node of c, last last, with a switchover before the
// writer's restart where the kind has one; each step is appended to c's faults log. The
// detail lists each node's time down and to ready, and the switchover.
func injectRollingRestart(ctx context.Context, in *Injector, c *cluster.Cluster, last *cluster.Node, args scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
	timeout := args.Duration("timeout")
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	var order []*cluster.Node
	for _, n := range c.Nodes {
		if n != last && !n.IsAux() {
			order = append(order, n)
		}
	}
	order = append(order, last)
	writer := c.LiveWriter(ctx)
	var parts []string
	for _, n := range order {
		if n == last && len(order) > 1 && writer != nil && writer.Name == last.Name {
			sw, err := rollingSwitchover(ctx, in, c, last, order[0])
			if sw != "" {
				parts = append(parts, sw)
			}
			if err != nil {
				return strings.Join(parts, "; "), err
			}
		}
		st, err := rollingRestartNode(ctx, in, c, n, timeout)
		part := fmt.Sprintf("%s down %.2f s, ready %.2f s after its stop", st.node, st.downS, st.upS)
		if st.leave != "" {
			part += " (stopped in its group: " + st.leave + ")"
		}
		parts = append(parts, part)
		if err != nil {
			return strings.Join(parts, "; "), fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return strings.Join(parts, "; "), nil
}

// rollingRestartNode stops and starts n, waits up to timeout for the topology to be ready
// and appends the step's record (action restart, Of rolling-restart) to c's faults log.
func rollingRestartNode(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, timeout time.Duration) (rollingStep, error) {
	at := time.Now()
	rec := schema.FaultRecord{At: at.UTC(), Action: "restart", Node: n.Name, PID: n.PID, Of: "rolling-restart"}
	st := rollingStep{node: n.Name}
	if lerr := c.LeaveGroup(ctx, n); lerr != nil {
		// The stop goes on: a restart without the planned leave is still a restart.
		st.leave = lerr.Error()
	}
	err := escalated(&rec, in.nodeOp(ctx, c, cluster.OpStopNode, n))
	st.downS = time.Since(at).Seconds()
	if err == nil {
		err = in.start(ctx, c, n)
	}
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		err = cluster.WaitTopologyReady(wctx, c)
		cancel()
		if err != nil {
			err = fmt.Errorf("topology not ready within %v of the start: %w", timeout, err)
		}
	}
	st.upS = time.Since(at).Seconds()
	rec.Took = st.upS
	if err != nil {
		rec.Error = err.Error()
	}
	if lerr := AppendFault(c, rec); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return st, err
}

// rollingSwitchover moves the writes from old to to before old's restart: promote on
// promotable kinds, group_replication_set_as_primary() on a single-primary group ("",
// nil on the others: Galera, multi-primary). The step is appended to c's faults log as a
// promote (Of rolling-restart); the returned text says what happened.
func rollingSwitchover(ctx context.Context, in *Injector, c *cluster.Cluster, old, to *cluster.Node) (string, error) {
	promotable := topology.KindOf(c.Spec.Kind).Promotable
	group := c.Spec.Is(topology.Group) && c.Spec.Group.Mode != topology.GroupMultiPrimary
	if !promotable && !group {
		return "", nil
	}
	at := time.Now()
	rec := schema.FaultRecord{At: at.UTC(), Action: "promote", Node: to.Name, PID: to.PID, Of: "rolling-restart"}
	var err error
	how := "group primary"
	if promotable {
		how = "promoted"
		_, err = injectPromote(ctx, in, c, to, nil, &rec)
	} else {
		err = c.SetGroupPrimary(ctx, to.Name)
	}
	rec.Took = time.Since(at).Seconds()
	if err != nil {
		rec.Error = err.Error()
		err = fmt.Errorf("switchover from %s to %s: %w", old.Name, to.Name, err)
	}
	if lerr := AppendFault(c, rec); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return fmt.Sprintf("switchover: %s %s %s in %.2f s", to.Name, how, "(from "+old.Name+")", rec.Took), err
}
