package scenario

import "github.com/habench/habench/topology"

// Writer modes of a run's workers (--writer, scenario workload.writer).
const (
	// WriterAuto: the workers follow the writer (workload.Target.Follow): after a group
	// elects a new primary, or a replica is promoted, they reconnect to the new one.
	WriterAuto = "auto"
	// WriterFixed: the workers stay on the nodes they started on.
	WriterFixed = "fixed"
)

// Client failover modes of a scenario's workers on topologies where every node takes
// writes (workload.failover).
const (
	// FailoverAuto (the default): the workers fail over between their nodes when the
	// scenario's faults take away a node they write to (experiment's failoverPlan).
	FailoverAuto = "auto"
	// FailoverOff: never; a failure of a node ends the cell unless its error is ignored,
	// as in sysbench (an application without a host list or a balancer).
	FailoverOff = "off"
)

// DefaultWriterMode is auto for a single-primary group (its primary can change under the
// run), fixed for every other kind.
func DefaultWriterMode(spec topology.Spec) string {
	if def := topology.KindOf(spec.Kind); def.AutoWriter != nil && def.AutoWriter(spec) {
		return WriterAuto
	}
	return WriterFixed
}

// CanFollow says why the workers cannot follow the writer of spec ("" when they can):
// multi-primary groups and Galera take writes on every node.
func CanFollow(spec topology.Spec) string {
	if def := topology.KindOf(spec.Kind); def.NoSingleWriter != nil {
		return def.NoSingleWriter(spec)
	}
	return ""
}
