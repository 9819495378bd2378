package topology

import (
	"fmt"
	"time"
)

// GaleraArbitrator is a Galera cluster plus an arbitrator: garbd (Debian's
// galera-arbitrator-4), a group member that votes in quorum decisions but stores no data
// and takes no SQL. Written `kind: galera` with `galera: {arbitrator: true}` (or
// `kind: galera-arbitrator`). The design it rehearses is two sites of two nodes each and
// the arbitrator in a third place: when one site is cut off, the other site and the
// arbitrator are 3 of 5 votes and stay Primary.
const GaleraArbitrator Kind = "galera-arbitrator"

// The arbitrator member: its name, role and program (registered in package cluster).
const (
	ArbitratorName    = "arb"
	RoleArbitrator    = Role("arbitrator")
	ArbitratorProgram = "garbd"
)

func init() {
	RegisterKind(KindDef{
		Kind: GaleraArbitrator, Base: Galera, Order: 55,
		Summary:      "Galera plus an arbitrator (garbd) that votes but holds no data: 2+2 nodes in two sites, the arbitrator in a third",
		DefaultNodes: 4,
		Keys:         []string{"galera.arbitrator"},
		Claim:        func(s *Spec) bool { return s.Galera.Extra["arbitrator"] == true },
		// Galera's defaults (the SST method) come first.
		Defaults: func(s *Spec) {
			if _, given := s.Galera.Extra["arbitrator"]; !given {
				if s.Galera.Extra == nil {
					s.Galera.Extra = map[string]any{}
				}
				s.Galera.Extra["arbitrator"] = true
			}
		},
		Validate: func(s *Spec) error {
			if v := s.Galera.Extra["arbitrator"]; v != true {
				return &FieldError{"galera.arbitrator", v, "kind galera-arbitrator has an arbitrator: want true, or kind galera"}
			}
			if s.Nodes < 2 || s.Nodes > MaxNodes-1 {
				return &FieldError{"nodes", s.Nodes, fmt.Sprintf("galera with an arbitrator needs 2 to %d nodes (the arbitrator is one more member)", MaxNodes-1)}
			}
			return nil
		},
		// Galera's plan, samplers, writers, member word, conflict errors and restart
		// estimate (KindDef.Base); the arbitrator joins after the plan in about 3.5 s (it
		// waits for the nodes' membership rounds).
		Deploy: func(Spec) (time.Duration, time.Duration) { return 7 * time.Second, 3 * time.Second },
		Aux: func(Spec) []AuxNode {
			return []AuxNode{{Name: ArbitratorName, Role: RoleArbitrator, Program: ArbitratorProgram}}
		},
	})
}

// ArbitratorAddrs returns what garbd needs to join spec's cluster: the group
// communication address (host:port) of every node, which garbd connects to, and the
// address it listens on itself (gmcast.listen_addr) when it runs at host, sqlPort (its
// member address, as a node would have). addr is where each node listens, as for the plan.
// Ports follow the nodes': the standard 4567 when every member has its own host, else
// offsets from the member's port. Error (*FieldError) when a port would pass 65535.
func ArbitratorAddrs(spec Spec, addr Addr, host string, sqlPort int) (peers []string, listen string, err error) {
	hosts := map[string]bool{}
	type hp struct {
		host string
		port int
	}
	var nodes []hp
	for i := 1; i <= spec.Nodes; i++ {
		h, p := addr(NodeName(i))
		hosts[h] = true
		nodes = append(nodes, hp{h, p})
	}
	shared := len(hosts) < spec.Nodes
	for _, n := range nodes {
		ports, err := galeraPortsFor(n.port, shared)
		if err != nil {
			return nil, "", err
		}
		peers = append(peers, hostPort(n.host, ports.Group))
	}
	ports, err := galeraPortsFor(sqlPort, shared || hosts[host])
	if err != nil {
		return nil, "", err
	}
	return peers, hostPort(host, ports.Group), nil
}
