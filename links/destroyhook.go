package links

import (
	"fmt"

	"github.com/habench/habench/cluster"
)

// Impairments habench made standing on a cluster's hosts over SSH (qdiscs, link agents)
// outlive the cluster's state directory unless they are cleared first, so the store clears
// them before any destroy or forget of such a cluster (the sandbox's own links go with its
// namespaces).
func init() {
	cluster.RegisterDestroyHook(cluster.DestroyHook{Name: "links", Before: clearBeforeDestroy})
}

// clearBeforeDestroy clears c's standing impairments on its hosts. Error: one that could
// not be cleared; the cluster is then kept, and the error says what to run.
func clearBeforeDestroy(c *cluster.Cluster) error {
	if c.Links() != cluster.LinksSSH {
		return nil
	}
	st, err := ReadStanding(c)
	if err != nil || st == nil || len(st.Hosts) == 0 {
		return nil
	}
	if err := ClearStanding(c); err != nil {
		return fmt.Errorf("cluster %s: could not remove habench's impairments from its hosts, so it was kept (habench netem clear %s, then destroy): %w", c.Name, c.Name, err)
	}
	return nil
}
