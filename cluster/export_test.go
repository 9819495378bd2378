package cluster

import (
	"context"

	"github.com/habench/habench/topology"
)

// RunPlan exposes runPlan to the package's external tests.
func (s *Store) RunPlan(ctx context.Context, c *Cluster, plan topology.Plan) error {
	return s.runPlan(ctx, c, plan)
}

// GuardSSH exposes guardSSH to the package's external tests.
var GuardSSH = guardSSH
