package topology

func init() {
	RegisterKind(KindDef{
		Kind: Async, Existing: true, Order: 20,
		Summary:    "one source, N-1 asynchronous replicas, GTID auto-positioning",
		Validate:   validateReplicated,
		Plan:       func(spec Spec, caps Capabilities, addr Addr) (Plan, error) { return planAsync(spec, caps, addr), nil },
		Samplers:   []string{"heartbeat", "gtid", "replica", "host"},
		Promotable: true,
	})
}

// validateReplicated: a source and at least one replica.
func validateReplicated(s *Spec) error {
	return nodesAtLeast(s, 2, "a source and at least 1 replica (2 or more)")
}

// planAsync: n1 is the source, n2..nN asynchronous replicas with GTID auto-positioning
// (MySQL SOURCE_AUTO_POSITION=1, MariaDB MASTER_USE_GTID=slave_pos). Replicas are
// read-only (super_read_only on MySQL).
func planAsync(spec Spec, caps Capabilities, addr Addr) Plan {
	return planReplicated(spec, caps, addr, nil, nil)
}

// planReplicated builds source + replicas; srcExtra/repExtra add kind-specific options.
func planReplicated(spec Spec, caps Capabilities, addr Addr, srcExtra, repExtra []Option) Plan {
	var p Plan
	for i := 1; i <= spec.Nodes; i++ {
		n := NodePlan{Name: NodeName(i), Role: RoleReplica, ServerID: i}
		n.Options = baseOptions(spec, caps, i)
		if i == 1 {
			n.Role = RoleSource
			n.Options = append(n.Options, srcExtra...)
		} else {
			n.Options = append(n.Options, repExtra...)
			n.Options = append(n.Options, Option{"read_only", "ON"})
			if caps.GTIDKind == GTIDMySQL {
				n.Options = append(n.Options, Option{"super_read_only", "ON"})
			}
		}
		n.Options = append(n.Options, userOptions(spec)...)
		p.Nodes = append(p.Nodes, n)
	}
	for _, n := range p.Nodes {
		sql := usersSQL(spec, caps)
		if n.Role == RoleReplica {
			// super_read_only blocks CREATE USER even with sql_log_bin=0.
			if caps.GTIDKind == GTIDMySQL {
				sql = append([]string{"SET GLOBAL super_read_only=OFF"}, sql...)
				sql = append(sql, "SET GLOBAL super_read_only=ON")
			}
		}
		p.Steps = append(p.Steps, Step{Node: n.Name, Desc: "create users", SQL: sql})
	}
	srcHost, srcPort := addr(p.Nodes[0].Name)
	for _, n := range p.Nodes[1:] {
		p.Steps = append(p.Steps, Step{
			Node: n.Name,
			Desc: "replicate from " + p.Nodes[0].Name,
			SQL:  []string{caps.ChangeSource(srcHost, srcPort, ReplUser, spec.Credentials.ReplPass()), caps.StartReplica()},
			Wait: WaitReplicaRunning,
		})
	}
	return p
}
