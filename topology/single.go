package topology

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
// replicated topologies under the same durability settings.
func planSingle(spec Spec, caps Capabilities) Plan {
	n := NodePlan{Name: NodeName(1), Role: RoleSource, ServerID: 1}
	n.Options = append(baseOptions(spec, caps, 1), userOptions(spec)...)
	return Plan{
		Nodes: []NodePlan{n},
		Steps: []Step{{Node: n.Name, Desc: "create users", SQL: usersSQL(spec, caps)}},
	}
}
