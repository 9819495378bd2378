package experiment

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// promote: a replica becomes the source of an async or semi-sync topology (the kinds
// whose KindDef.Promotable is set); the others are repointed with GTID auto-positioning.
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "promote",
			Order: 70,
			Help: "make a replica the new source of an async or semi-sync topology and repoint the others\n" +
				"with GTID auto-positioning; a running old source is made read-only and the new source\n" +
				"first applies everything it had (up to --catch-up-timeout)",
			Past: "promoted",
			Check: func(t topology.Spec, _ string) string {
				if !topology.KindOf(t.Kind).Promotable {
					return fmt.Sprintf("topology %s is %s: promote is for kinds whose replicas can become the source (%s)", t.Name, t.Kind, strings.Join(promotableKinds(), ", "))
				}
				return ""
			},
		},
		Ops:      []cluster.Op{cluster.OpPromote},
		Inject:   injectPromote,
		CaughtUp: CaughtUpAfterAction,
	})
}

// injectPromote promotes n, waiting up to in.CatchUp (30 s when 0) for a running old
// source's transactions; the detail says what became of the old source and the replicas.
func injectPromote(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
	catchUp := in.CatchUp
	if catchUp <= 0 {
		catchUp = 30 * time.Second
	}
	rep, err := in.Store.Promote(ctx, c, n.Name, catchUp)
	if rep == nil {
		return "", err
	}
	state := "down: what it had not sent is lost"
	if rep.OldSourceUp {
		state = "up, caught up first"
	}
	detail := fmt.Sprintf("old source %s %s; repointed %s", rep.OldSource, state, strings.Join(rep.Repointed, ","))
	if len(rep.Down) > 0 {
		detail += "; down, repointed when started: " + strings.Join(rep.Down, ",")
	}
	if rep.ProxyOff > 0 || rep.ProxyStill {
		detail += fmt.Sprintf("; the proxy stopped sending writes to %s after %.2f s (held fenced until then)", rep.OldSource, rep.ProxyOff.Seconds())
		if rep.ProxyStill {
			detail = strings.Replace(detail, "; the proxy stopped", "; ⚠ the proxy had not stopped", 1)
		}
	}
	if rep.OldSourceUp {
		detail += fmt.Sprintf("; %d benchmark sessions left on %s closed", rep.SessionsKilled, rep.OldSource)
	}
	return detail, err
}
