package topology

// planSingle: one node, role source, with a binary log so that results compare with
// replicated topologies under the same durability settings.
func planSingle(spec Spec, caps Capabilities) Plan {
	n := NodePlan{Name: NodeName(1), Role: RoleSource, ServerID: 1}
	n.Options = append(baseOptions(spec, caps, 1), userOptions(spec)...)
	return Plan{
		Nodes: []NodePlan{n},
		Steps: []Step{{Node: n.Name, Desc: "create users", SQL: usersSQL(caps)}},
	}
}
