package scenario

import (
	"fmt"
	"strings"

	"github.com/habench/habench/topology"
)

// CheckClients checks the scenario's clients (Scenario.Clients: `clients:`, or `habench
// run --clients`, field names which) and refuses what the clients cannot run, in one line
// before anything is deployed (*topology.FieldError on field): workers that follow the
// writer (writer auto, the default on a single-primary group that habench deploys),
// workers through the proxy (via: proxy, a via axis), workers that would fail over
// between nodes when the scenario's faults take one away (failover auto, the default,
// on a topology that takes writes on every node). The coordinator's view of the cluster,
// which these need, does not reach the clients. nil without clients.
func (s *Scenario) CheckClients(field string) error {
	if s.Clients.IsZero() {
		return nil
	}
	if err := s.Clients.Validate(field); err != nil {
		return err
	}
	list := strings.Join(s.Clients.Hosts, ",")
	refuse := func(why string) error { return &topology.FieldError{Field: field, Value: list, Reason: why} }
	if s.Workload.Via == ViaProxy || s.Sweep.Axis("via") != nil {
		return refuse("the workers would connect through the proxy as the coordinator sees it, which the clients cannot: give workload.via: direct and no via axis")
	}
	for i, t := range s.Topologies {
		writer := s.Workload.Writer
		if writer == "" && len(s.Workload.Nodes.For(t.Name)) == 0 && Deploys(t) {
			writer = DefaultWriterMode(t)
		}
		if writer == WriterAuto {
			return refuse(fmt.Sprintf("topologies[%d] %s: its workers would follow the writer (writer auto, the default on a single-primary group), which the clients cannot: give workload.writer: fixed", i, t.Name))
		}
		if len(s.Faults) > 0 && s.Workload.Failover != FailoverOff && CanFollow(t) != "" {
			return refuse(fmt.Sprintf("topologies[%d] %s: with faults its workers would fail over between nodes, which the clients cannot: give workload.failover: off", i, t.Name))
		}
	}
	return nil
}

// CheckClientsReach refuses (without AllowShared) clients of a scenario whose topologies
// include a sandbox on this machine, in one line naming field and the topology: its
// servers listen on this machine's loopback or in its own network namespaces, which other
// hosts cannot reach (AllowShared: the clients are on this machine). Called once the
// topologies' providers are final (after habench run's --hosts); nil without clients.
func (s *Scenario) CheckClientsReach(field string) error {
	if s.Clients.IsZero() || s.Clients.AllowShared {
		return nil
	}
	for i, t := range s.Topologies {
		if Deploys(t) && (t.Provider == "" || t.Provider == topology.ProviderSandbox) {
			return &topology.FieldError{Field: field, Value: strings.Join(s.Clients.Hosts, ","),
				Reason: fmt.Sprintf("topologies[%d] %s is a sandbox on this machine, whose servers other hosts cannot reach: deploy it on your hosts (provider: hosts, --hosts), or allow_shared (--allow-shared-client) for clients on this machine", i, t.Name)}
		}
	}
	return nil
}
