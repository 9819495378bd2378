package knob

import (
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// A cluster habench did not deploy (an existing one, registered) keeps its servers when it
// is forgotten, and with them any value a run changed and could not restore: its pending
// record (PendingFile, in the cluster's directory) is what `habench knob restore` needs,
// so the store refuses to forget it, on every path (destroy, destroy --all, a sweep
// forgetting a cluster it registered for the run). A deployed cluster's servers go with it.
func init() {
	cluster.RegisterDestroyHook(cluster.DestroyHook{Name: "knob", Refuse: refuseForgetWithPending})
}

// refuseForgetWithPending is a *topology.FieldError (field name, the cluster) when c was
// not deployed by habench and holds a pending record: who holds it, or the restore to run.
func refuseForgetWithPending(c *cluster.Cluster) error {
	if c.Deployed() {
		return nil
	}
	if p := Pending(c); p != "" {
		return &topology.FieldError{Field: "name", Value: c.Name, Reason: "existing cluster not forgotten: " + p}
	}
	return nil
}
