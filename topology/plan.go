package topology

import (
	"cmp"
	"fmt"
	"strconv"
	"time"
)

// Option is one server option as written in an option file: name=value ("" value
// writes a bare flag). Names use underscores.
type Option struct {
	Name, Value string
}

// NodePlan is one node of a planned topology: its name (n1, n2, ...), role, server_id
// and the topology's server options (the provider adds datadir, socket, port, address).
type NodePlan struct {
	Name     string
	Role     Role
	ServerID int
	Options  []Option
	// StartArgs are extra server arguments for the node's first start only, never written
	// to its option file (so a later restart runs without them): Galera's
	// --wsrep-new-cluster on the bootstrap node.
	StartArgs []string
	// EmptyDatadir: the node gets all its data by state transfer (a Galera joiner), so
	// the provider starts it with an empty datadir instead of an initialised one.
	EmptyDatadir bool
}

// Wait is a condition a bootstrap step waits for after its SQL has run.
type Wait string

const (
	WaitNone           Wait = ""
	WaitReplicaRunning Wait = "replica-running"  // replica IO and SQL threads both running
	WaitSemiSyncReady  Wait = "semisync-clients" // source counts >= wait_for_replicas semi-sync replicas
	// WaitGroupOnline: the node's own row in performance_schema.replication_group_members
	// (MEMBER_ID = @@server_uuid) says MEMBER_STATE ONLINE (Group Replication).
	WaitGroupOnline Wait = "group-online"
	// WaitSynced: Galera node Synced (wsrep_local_state_comment), in a Primary component
	// (wsrep_cluster_status), wsrep_ready ON, and wsrep_cluster_size >= Step.ClusterSize.
	WaitSynced Wait = "galera-synced"
)

// Step is one ordered bootstrap action: SQL to run on a node (over the admin socket,
// in order, with sql_log_bin as the statements set it), then a condition to wait for.
type Step struct {
	Node string
	Desc string
	// Start makes the step start the node's server first (with NodePlan.StartArgs) and wait
	// until it accepts connections. Nodes that no step starts are started together before
	// the first step; nodes started by steps start one after the other, in step order.
	Start bool
	SQL   []string
	Wait  Wait
	// IgnoreErrors are server error numbers that count as success for this step's
	// statements (an idempotent step: e.g. INSTALL COMPONENT of an installed component).
	IgnoreErrors []uint16
	// Background: the statements run on their own connection while Wait is polled, and
	// the next step starts as soon as Wait is met; the provider collects the statements'
	// errors before the plan ends (a failing statement also ends its Wait at once). For
	// statements that return well after their effect is visible: START GROUP_REPLICATION
	// returns about 1 s after the member is ONLINE. Needs a Wait.
	Background bool
	// ClusterSize is the wsrep_cluster_size WaitSynced waits for (at least).
	ClusterSize int
	// Replicas is how many semi-sync replicas WaitSemiSyncReady waits for (at least; the
	// spec's wait_for_replicas when larger).
	Replicas int
}

// StartArgs returns node's NodePlan.StartArgs (nil for a node the plan does not have).
func (p Plan) StartArgs(node string) []string {
	for _, np := range p.Nodes {
		if np.Name == node {
			return np.StartArgs
		}
	}
	return nil
}

// StartedBySteps reports whether a step of the plan starts node (Step.Start).
func (p Plan) StartedBySteps(node string) bool {
	for _, st := range p.Steps {
		if st.Start && st.Node == node {
			return true
		}
	}
	return false
}

// Plan is what a provider executes to bring a topology up: per-node options, then Steps in order.
type Plan struct {
	Nodes []NodePlan
	Steps []Step
	// StaggerStarts: the servers no step starts start at most one per CPU at a time, in
	// node order, rather than all at once: a member is needed only after the previous one
	// joined (group), so a later member starts in the CPU the earlier joins leave idle.
	StaggerStarts bool
}

// Addr tells a plan where a node will listen (host as seen by the other nodes, and port).
type Addr func(node string) (host string, port int)

// Sandbox credentials created on every node by the bootstrap (not binlogged).
const (
	BenchUser     = "habench" // all privileges, used by workloads and samplers over TCP
	BenchPassword = "habench"
	ReplUser      = "repl" // REPLICATION SLAVE, used by replicas to connect to the source
	ReplPassword  = "repl"
)

// Credentials are the passwords of the accounts a plan creates on every node: Bench for
// BenchUser, Repl for ReplUser. An empty field is the sandbox default (BenchPassword,
// ReplPassword): local sandboxes listen only on this machine; the hosts provider sets
// random ones per cluster, since its servers listen on the user's network.
type Credentials struct {
	Bench string
	Repl  string
}

// BenchPass is the benchmark user's password (BenchPassword when unset).
func (c Credentials) BenchPass() string { return cmp.Or(c.Bench, BenchPassword) }

// ReplPass is the replication user's password (ReplPassword when unset).
func (c Credentials) ReplPass() string { return cmp.Or(c.Repl, ReplPassword) }

// NodeName returns the name of node i (1-based): n1, n2, ...
func NodeName(i int) string { return "n" + strconv.Itoa(i) }

// BuildPlan returns the plan for spec on servers with capabilities caps. The spec must
// already be validated (Spec.Validate); BuildPlan errors on kinds it cannot plan.
func BuildPlan(spec Spec, caps Capabilities, addr Addr) (Plan, error) {
	def, err := LookupKind(spec.Kind)
	if err != nil {
		return Plan{}, err
	}
	return def.Plan(spec, caps, addr)
}

// baseOptions are the options every node of every kind gets: a binary log with GTIDs,
// row format, and the user's own options last (so they win).
func baseOptions(spec Spec, caps Capabilities, serverID int) []Option {
	o := []Option{
		{"server_id", strconv.Itoa(serverID)},
		{"log_bin", "binlog"},
		{"relay_log", "relay"},
		{"binlog_format", "ROW"},
		{caps.LogReplicaUpdates(), "ON"},
		{"skip_name_resolve", "ON"},
	}
	if caps.GTIDKind == GTIDMySQL {
		o = append(o, Option{"gtid_mode", "ON"}, Option{"enforce_gtid_consistency", "ON"})
	} else {
		o = append(o, Option{"gtid_strict_mode", "ON"}, Option{"gtid_domain_id", "0"})
	}
	return o
}

// userOptions returns spec.Options in a stable (sorted) order.
func userOptions(spec Spec) []Option {
	var o []Option
	for _, k := range sortedKeys(spec.Options) {
		o = append(o, Option{k, spec.Options[k]})
	}
	return o
}

// usersSQL creates the sandbox users without writing them to the binary log, so every
// node starts with the same empty GTID history.
func usersSQL(spec Spec, caps Capabilities) []string {
	return []string{
		"SET SESSION sql_log_bin=0",
		fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s'", BenchUser, spec.Credentials.BenchPass()),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION", BenchUser),
		fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s'", ReplUser, spec.Credentials.ReplPass()),
		fmt.Sprintf("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '%s'@'%%'", ReplUser),
		"SET SESSION sql_log_bin=1",
	}
}

func msString(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
