package topology

import "strings"

func init() {
	RegisterKind(KindDef{
		Kind: Single, Existing: true, Order: 10, DefaultNodes: 1,
		Summary: "one primary, no replicas",
		Validate: func(s *Spec) error {
			if s.Nodes != 1 {
				return &FieldError{"nodes", s.Nodes, "a single topology has exactly 1 node"}
			}
			return nil
		},
		Plan:     func(spec Spec, caps Capabilities, _ Addr) (Plan, error) { return planSingle(spec, caps), nil },
		Samplers: []string{"heartbeat", "host"},
	})
}

// planSingle: one node, role source, with a binary log so that results compare with
// replicated topologies under the same durability settings. A node given wsrep_on=ON (a
// data snapshot's server on MariaDB with Galera: a one-node cluster) is waited for until
// it is Synced before the users are created: until then it refuses statements (1047).
func planSingle(spec Spec, caps Capabilities) Plan {
	n := NodePlan{Name: NodeName(1), Role: RoleSource, ServerID: 1}
	n.Options = append(baseOptions(spec, caps, 1), userOptions(spec)...)
	var steps []Step
	if strings.EqualFold(spec.Options["wsrep_on"], "ON") {
		steps = append(steps, Step{Node: n.Name, Desc: "one-node Galera cluster Synced", Wait: WaitSynced, ClusterSize: 1})
	}
	return Plan{
		Nodes: []NodePlan{n},
		Steps: append(steps, Step{Node: n.Name, Desc: "create users", SQL: usersSQL(spec, caps)}),
	}
}
