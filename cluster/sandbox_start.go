package cluster

// Starting a sandbox's servers: a node's server is launched as soon as its datadir is
// ready, and the plan's first step on a node waits for that node alone. A plan with
// StaggerStarts (group) starts at most one server per CPU at a time: a MySQL 9.7 start
// takes 0.84 s of CPU, three at once on two cores came up after about 2 s, two at once
// after 1.4-1.6 s, so on two cores n1 and n2 start together and n1 bootstraps while n3
// starts in the CPU n2's join leaves idle (make bench-deploy, group means: 5.35-5.53 -> 4.81-5.16 s). Other plans
// start every server at once: async's three MySQL servers were up after 2.2 s together,
// 2.8 s two and one.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/habench/habench/topology"
)

// prepareAndLaunch builds c's plan and, node by node, makes its datadir and option file
// and launches its server (or queues it for a start slot) unless a plan step starts it.
// It returns the plan and the servers, not waited for (launched.await). The error is the
// first node's that could not be prepared, with those of the servers launched so far.
func (s *Store) prepareAndLaunch(ctx context.Context, c *Cluster, spec topology.Spec, bins *Binaries, start time.Time) (topology.Plan, *launched, error) {
	up := &launched{
		ctx: ctx, slots: len(c.Nodes), ended: make(chan struct{}, len(c.Nodes)+1),
		launch: func(n *Node) (func(context.Context) error, error) { return s.launchNode(c, n) },
		save:   c.save,
		log:    s.log().With("cluster", c.Name), start: start,
	}
	plan, tmpl, seed, err := s.nodePlan(ctx, c, spec, bins)
	if err != nil {
		return plan, up, err
	}
	if plan.StaggerStarts {
		up.slots = max(1, runtime.NumCPU())
	}
	for i, n := range c.Nodes {
		if err = s.prepareNode(c, n, plan.Nodes[i], tmpl, seed); err != nil {
			err = fmt.Errorf("node %s: %w", n.Name, err)
		} else if !plan.StartedBySteps(n.Name) {
			err = up.add(n)
		}
		if err != nil {
			up.queue = nil
			return plan, up, errors.Join(err, up.all())
		}
	}
	return plan, up, nil
}
