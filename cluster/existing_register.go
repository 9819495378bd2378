package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/topology"
)

// An existing cluster is one habench did not deploy: its servers run elsewhere (any host
// the user names; see CheckExistingHost for the test harness's network guard) and habench
// only connects to them (and, with SSH configured, runs tc and reads /proc on their hosts). Its state.json has Provider
// "existing" and Network NetExisting; its nodes have a role, host and port but no socket,
// directory, namespace or process. habench never deploys, restarts, stops or destroys
// those servers: Destroy only forgets the registration, node start/stop/kill and link
// impairments are refused, and knobs are limited to what SET GLOBAL can change.

// NetExisting is the Network of an existing cluster: habench manages none of its links.
const NetExisting = "existing"

// Existing reports whether c is an existing cluster (registered, not deployed by habench).
// Callers outside the providers ask the provider instead (Cluster.Refuse, Offers,
// Deployed, NodeRunning, Links): kept for the register command and tests.
func (c *Cluster) Existing() bool { return c.ProviderName == topology.ProviderExisting }

// ExistingNode is one parsed DSN of an existing cluster.
type ExistingNode struct {
	Host     string
	Port     int
	User     string
	Password string
}

// ParseExistingDSN reads one node DSN, "user:password@tcp(host:port)/" or
// "tcp(host:port)/" (user and password then come from the defaults), go-sql-driver's
// syntax. Only TCP; the host is an IPv4/IPv6 address or a host name, not resolved here
// ("localhost" becomes 127.0.0.1; see CheckExistingHost); port default 3306. Errors are *topology.FieldError on field,
// with the password hidden in the value.
func ParseExistingDSN(field, dsn, user, password string) (ExistingNode, error) {
	shown := RedactDSN(dsn)
	cfg, err := mysql.ParseDSN(strings.TrimSpace(dsn))
	if err != nil {
		return ExistingNode{}, &topology.FieldError{Field: field, Value: shown, Reason: "want user:password@tcp(host:port)/ or tcp(host:port)/: " + err.Error()}
	}
	if cfg.Net != "tcp" {
		return ExistingNode{}, &topology.FieldError{Field: field, Value: shown, Reason: fmt.Sprintf("network %q: want tcp(host:port)", cfg.Net)}
	}
	host, portS, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host, portS = cfg.Addr, "3306"
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < 1 || port > 65535 {
		return ExistingNode{}, &topology.FieldError{Field: field, Value: shown, Reason: fmt.Sprintf("port %q: want 1 to 65535", portS)}
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	n := ExistingNode{Host: host, Port: port, User: cfg.User, Password: cfg.Passwd}
	if n.User == "" {
		n.User, n.Password = user, password
	}
	if n.User == "" {
		return n, &topology.FieldError{Field: field, Value: shown, Reason: "no user: write user:password@tcp(host:port)/ or give user (and password) for all nodes"}
	}
	if err := CheckExistingHost(host); err != nil {
		return n, &topology.FieldError{Field: field, Value: shown, Reason: err.Error()}
	}
	return n, nil
}

// CheckExistingHost checks an existing node's host as written in its DSN: an IPv4 or IPv6
// address or a host name (letters, digits, '-', '.'; at most 253 characters), without
// resolving it. Under the test harness's network guard (NetworkGuard) the host must also
// be an address CheckDestination allows (loopback, or a namespace on this machine) and a
// name is refused before any lookup. Errors say which rule the host breaks.
func CheckExistingHost(host string) error {
	ip := net.ParseIP(host)
	if ip == nil && !validHostName(host) {
		return fmt.Errorf("host %q: want an IP address or a host name (letters, digits, '-' and '.')", host)
	}
	if !NetworkGuard() {
		return nil
	}
	if ip == nil {
		return fmt.Errorf("host %q: want an IP address: under %s=1 (the test harness's network guard) habench resolves no names", host, NetworkGuardEnv)
	}
	if err := CheckDestination(ip.String()); err != nil {
		return fmt.Errorf("host %s: %v", ip, err)
	}
	return nil
}

// validHostName reports whether h is a syntactically valid DNS host name.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// RedactDSN hides the password of a DSN ("u:***@tcp(...)/").
func RedactDSN(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	if at < 0 {
		return dsn
	}
	if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
		return dsn[:colon] + ":***" + dsn[at:]
	}
	return dsn
}

// NodeFacts is what discovery reads from one server.
type NodeFacts struct {
	Version        string // SELECT VERSION()
	VersionComment string // @@version_comment
	Flavor         topology.Flavor
	Ver            topology.Version
	ServerID       int
	Identity       string // @@hostname:@@port:@@datadir, to spot one server given twice
	ReadOnly       bool

	// Replica: the node has an asynchronous replication channel (not Group Replication's).
	Replica         bool
	SourceServerID  int
	SourceHost      string
	SourcePort      int
	IORunning       string
	SQLRunning      string
	SemiSyncSource  bool // rpl_semi_sync_{source,master}_enabled = ON
	SemiSyncReplica bool // rpl_semi_sync_{replica,slave}_enabled = ON
	SemiSync        topology.SemiSyncOptions

	// Group Replication (performance_schema.replication_group_members, own row).
	GRState, GRRole string
	GRSinglePrimary bool
	GRGroupName     string // @@group_replication_group_name

	// Galera: wsrep_on = ON and a provider connected.
	Galera            bool
	GaleraClusterSize int
	GaleraState       string // wsrep_local_state_comment
	GaleraStatus      string // wsrep_cluster_status
	GaleraUUID        string // wsrep_cluster_state_uuid
}

// FlavorOf infers the flavor from VERSION() and @@version_comment alone
// (topology.RecognizeFlavor without variables): MariaDB when the version says so, Percona
// XtraDB Cluster / Percona Server by comment, else MySQL.
func FlavorOf(version, comment string) topology.Flavor {
	return topology.RecognizeFlavor(topology.FlavorEvidence{Version: version, Comment: comment})
}

// Discover reads node facts from db: version and flavor, server id, read_only, its
// replication channel (SHOW REPLICA|SLAVE STATUS without Group Replication's channels),
// semi-sync variables, its Group Replication member row, and wsrep status. Errors only
// when the server cannot be queried at all.
func Discover(ctx context.Context, db *sql.DB) (*NodeFacts, error) {
	f := &NodeFacts{}
	var host, datadir string
	var port int
	var ro sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@version_comment, @@server_id, @@hostname, @@port, @@datadir, @@read_only").
		Scan(&f.Version, &f.VersionComment, &f.ServerID, &host, &port, &datadir, &ro); err != nil {
		return nil, err
	}
	f.ReadOnly = ro.String == "1" || strings.EqualFold(ro.String, "ON")
	f.Identity = fmt.Sprintf("%s:%d:%s", host, port, datadir)
	v, err := topology.ParseVersion(f.Version)
	if err != nil {
		return nil, err
	}
	f.Ver = v
	names := append([]string{"wsrep_on", "group_replication_single_primary_mode", "group_replication_group_name"}, topology.EvidenceVars()...)
	vars, err := ShowMap(ctx, db, "SHOW GLOBAL VARIABLES WHERE Variable_name LIKE 'rpl\\_semi\\_sync\\_%' OR Variable_name IN ('"+strings.Join(names, "', '")+"')")
	if err != nil {
		return nil, err
	}
	f.Flavor = topology.RecognizeFlavor(topology.FlavorEvidence{Version: f.Version, Comment: f.VersionComment, Vars: vars})
	caps := topology.CapabilitiesFor(f.Flavor, v)
	sv := caps.SemiSyncNames()
	f.SemiSyncSource = strings.EqualFold(vars[sv.SourceEnabled], "ON")
	f.SemiSyncReplica = strings.EqualFold(vars[sv.ReplicaEnabled], "ON")
	if f.SemiSyncSource {
		f.SemiSync.WaitPoint = strings.ToUpper(vars[sv.WaitPoint])
		if ms, err := strconv.Atoi(vars[sv.Timeout]); err == nil {
			f.SemiSync.Timeout = time.Duration(ms) * time.Millisecond
		}
		f.SemiSync.WaitForReplicas = 1
		if n, err := strconv.Atoi(vars[sv.WaitCount]); err == nil && sv.WaitCount != "" {
			f.SemiSync.WaitForReplicas = n
		}
	}
	f.GRSinglePrimary = strings.EqualFold(vars["group_replication_single_primary_mode"], "ON")
	f.GRGroupName = vars["group_replication_group_name"]
	if strings.EqualFold(vars["wsrep_on"], "ON") {
		st, err := ShowMap(ctx, db, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_cluster_state_uuid')")
		if err != nil {
			return nil, err
		}
		f.GaleraClusterSize, _ = strconv.Atoi(st["wsrep_cluster_size"])
		f.GaleraState, f.GaleraStatus, f.GaleraUUID = st["wsrep_local_state_comment"], st["wsrep_cluster_status"], st["wsrep_cluster_state_uuid"]
		f.Galera = f.GaleraClusterSize > 0
	}
	if caps.GroupReplication {
		// The table exists without the plugin (empty); a member has its own row.
		err := db.QueryRowContext(ctx, "SELECT MEMBER_STATE, MEMBER_ROLE FROM performance_schema.replication_group_members WHERE MEMBER_ID = @@server_uuid").Scan(&f.GRState, &f.GRRole)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("performance_schema.replication_group_members: %w", err)
		}
	}
	if err := f.readReplica(ctx, db, caps); err != nil {
		return nil, err
	}
	return f, nil
}

// readReplica fills the replica fields from the first replication channel that is not
// Group Replication's.
func (f *NodeFacts) readReplica(ctx context.Context, db *sql.DB, caps topology.Capabilities) error {
	rows, err := db.QueryContext(ctx, caps.ShowReplicaStatus())
	if err != nil {
		return fmt.Errorf("%s: %w", caps.ShowReplicaStatus(), err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		m := map[string]string{}
		for i, c := range cols {
			m[c] = vals[i].String
		}
		if strings.HasPrefix(m["Channel_Name"], "group_replication_") {
			continue
		}
		f.Replica = true
		pick := func(names ...string) string {
			for _, n := range names {
				if v, ok := m[n]; ok {
					return v
				}
			}
			return ""
		}
		f.SourceHost = pick("Source_Host", "Master_Host")
		f.SourcePort, _ = strconv.Atoi(pick("Source_Port", "Master_Port"))
		f.SourceServerID, _ = strconv.Atoi(pick("Source_Server_Id", "Master_Server_Id"))
		f.IORunning = m[caps.ReplicaStatusColumn("io_running")]
		f.SQLRunning = m[caps.ReplicaStatusColumn("sql_running")]
		break
	}
	return rows.Err()
}

// DSN is the node's go-sql-driver DSN through the guarded dialer (as Register connects).
func (n ExistingNode) DSN() string { return guardedDSN(n.Host, n.Port, n.User, n.Password) }

// InferTopology derives the kind and each node's role from the facts of every node (in
// node order; addrs are the host:port each node was reached at). Galera when every node
// is a connected wsrep node of one cluster; group when every node is an ONLINE Group
// Replication member of one group (same group_replication_group_name); group-dr when
// the nodes are such a group of three single-primary members followed by asynchronous
// replicas of its members (inferGroupDR); otherwise one source (the only node that
// replicates from nobody) with replicas whose source is one of the nodes (semisync when
// the source has semi-sync enabled), or single for one node. Errors say which node
// breaks the picture.
func InferTopology(facts []*NodeFacts, addrs []string) (topology.Kind, []topology.Role, error) {
	for _, f := range facts {
		if f.Galera {
			return inferGalera(facts)
		}
	}
	// A DR replica of a group: an asynchronous replica that is no member of the group
	// the ONLINE nodes form (no Group Replication plugin, or the plugin stopped with no
	// group name or another one). A member of that group that has left it (OFFLINE)
	// stays a member, refused below, even with a replication channel.
	group := ""
	for _, f := range facts {
		if f.GRState == "ONLINE" {
			group = f.GRGroupName
			break
		}
	}
	drReplica := func(f *NodeFacts) bool {
		return f.Replica && (f.GRState == "" || (f.GRState == "OFFLINE" && (f.GRGroupName == "" || f.GRGroupName != group)))
	}
	for _, f := range facts {
		if f.GRState != "" && !drReplica(f) {
			return inferGroup(facts, addrs, drReplica)
		}
	}
	return inferSourceReplicas(facts, addrs)
}

// inferName is the name of the node at index i of the facts InferTopology reads (n1 ...).
func inferName(i int) string { return topology.NodeName(i + 1) }

// inferGalera checks that every node is a wsrep node of one Galera cluster in the Primary
// component (InferTopology, with at least one Galera node).
func inferGalera(facts []*NodeFacts) (topology.Kind, []topology.Role, error) {
	roles := make([]topology.Role, len(facts))
	for i, f := range facts {
		if !f.Galera {
			return "", nil, fmt.Errorf("node %s is not a Galera node while others are (mixed topologies are not supported)", inferName(i))
		}
		if f.GaleraUUID != facts[0].GaleraUUID {
			return "", nil, fmt.Errorf("node %s is in Galera cluster %s, node n1 in %s", inferName(i), f.GaleraUUID, facts[0].GaleraUUID)
		}
		if f.GaleraStatus != "Primary" {
			return "", nil, fmt.Errorf("node %s: wsrep_cluster_status %s, want Primary", inferName(i), f.GaleraStatus)
		}
		roles[i] = topology.RoleNode
	}
	return topology.Galera, roles, nil
}

// inferGroup checks that the nodes that are not DR replicas (drReplica) are ONLINE
// members of one Group Replication group in one mode (InferTopology, with at least one
// member): group, or group-dr when there are DR replicas (inferGroupDR).
func inferGroup(facts []*NodeFacts, addrs []string, drReplica func(*NodeFacts) bool) (topology.Kind, []topology.Role, error) {
	roles := make([]topology.Role, len(facts))
	var members, replicas []int
	for i, f := range facts {
		if drReplica(f) {
			replicas = append(replicas, i)
			roles[i] = topology.RoleReplica
			continue
		}
		ref := i // the first member: what the others are compared with
		if len(members) > 0 {
			ref = members[0]
		}
		switch first := facts[ref]; {
		case f.GRState == "":
			return "", nil, fmt.Errorf("node %s is neither a Group Replication member nor a replica while others are members", inferName(i))
		case f.GRState != "ONLINE":
			return "", nil, fmt.Errorf("node %s: Group Replication member state %s, want ONLINE", inferName(i), f.GRState)
		case f.GRGroupName != first.GRGroupName:
			return "", nil, fmt.Errorf("node %s is in group %s, node %s in group %s (register each group as its own cluster)", inferName(i), f.GRGroupName, inferName(ref), first.GRGroupName)
		case f.GRSinglePrimary != first.GRSinglePrimary:
			return "", nil, fmt.Errorf("node %s: group_replication_single_primary_mode differs from %s's", inferName(i), inferName(ref))
		case f.GRRole == "PRIMARY":
			roles[i] = topology.RolePrimary
		default:
			roles[i] = topology.RoleSecondary
		}
		members = append(members, i)
	}
	if len(replicas) == 0 {
		return topology.Group, roles, nil
	}
	return inferGroupDR(facts, addrs, members, replicas, roles)
}

// inferSourceReplicas checks the nodes as one source with replicas of the given nodes
// (InferTopology without Galera or Group Replication): single, async, or semisync when
// the source has semi-sync enabled. A replica's source is matched by server_id, else by
// address.
func inferSourceReplicas(facts []*NodeFacts, addrs []string) (topology.Kind, []topology.Role, error) {
	roles := make([]topology.Role, len(facts))
	var writers []int
	for i, f := range facts {
		if !f.Replica {
			writers = append(writers, i)
			roles[i] = topology.RoleSource
			continue
		}
		roles[i] = topology.RoleReplica
		src := -1
		for j, o := range facts {
			if j != i && f.SourceServerID != 0 && o.ServerID == f.SourceServerID {
				src = j
			}
		}
		if src < 0 {
			for j := range facts {
				if j != i && addrs[j] == net.JoinHostPort(f.SourceHost, strconv.Itoa(f.SourcePort)) {
					src = j
				}
			}
		}
		if src < 0 {
			return "", nil, fmt.Errorf("node %s replicates from %s:%d (server_id %d), which is none of the given nodes: give every node of the topology", inferName(i), f.SourceHost, f.SourcePort, f.SourceServerID)
		}
	}
	switch {
	case len(writers) == 0:
		return "", nil, fmt.Errorf("every node is a replica (circular replication is not supported)")
	case len(writers) > 1:
		var ns []string
		for _, w := range writers {
			ns = append(ns, inferName(w))
		}
		return "", nil, fmt.Errorf("nodes %s replicate from nobody: one topology has one source (register unrelated servers as separate clusters)", strings.Join(ns, ", "))
	case len(facts) == 1:
		return topology.Single, roles, nil
	case facts[writers[0]].SemiSyncSource:
		return topology.SemiSync, roles, nil
	}
	return topology.Async, roles, nil
}

// inferGroupDR checks a group with asynchronous replicas as a group-dr topology: the
// group's members come first (n1..n3: the kind's layout), exactly topology.GroupDRMembers
// of them in single-primary mode, and every replica replicates from one of them (matched
// by server_id, else by address).
func inferGroupDR(facts []*NodeFacts, addrs []string, members, replicas []int, roles []topology.Role) (topology.Kind, []topology.Role, error) {
	if len(members) != topology.GroupDRMembers {
		return "", nil, fmt.Errorf("a group with DR replicas (%s) has %d members, %d given and %d replica(s): register a group of another size alone (kind %s)", topology.GroupDR, topology.GroupDRMembers, len(members), len(replicas), topology.Group)
	}
	if replicas[0] < members[len(members)-1] {
		return "", nil, fmt.Errorf("node %s is a replica and node %s a group member: give the group's members first, then the DR replicas (%s)", inferName(replicas[0]), inferName(members[len(members)-1]), topology.GroupDR)
	}
	if !facts[members[0]].GRSinglePrimary {
		return "", nil, fmt.Errorf("the group is multi-primary: DR replicas (%s) follow a single-primary group's primary", topology.GroupDR)
	}
	for _, r := range replicas {
		f, src := facts[r], -1
		for _, m := range members {
			if (f.SourceServerID != 0 && facts[m].ServerID == f.SourceServerID) || addrs[m] == net.JoinHostPort(f.SourceHost, strconv.Itoa(f.SourcePort)) {
				src = m
			}
		}
		if src < 0 {
			return "", nil, fmt.Errorf("node %s replicates from %s:%d (server_id %d), which is none of the group's members: a DR replica replicates from the group", inferName(r), f.SourceHost, f.SourcePort, f.SourceServerID)
		}
	}
	return topology.GroupDR, roles, nil
}

// ExistingNodes checks an existing spec's dsns without connecting or resolving names
// (syntax, TCP, hosts per CheckExistingHost, one user and password for all, no address
// twice) and returns the nodes. Errors are *topology.FieldError on "dsns[i]".
func ExistingNodes(spec topology.Spec) ([]ExistingNode, error) {
	var nodes []ExistingNode
	for i, d := range spec.DSNs {
		n, err := ParseExistingDSN(fmt.Sprintf("dsns[%d]", i), d, spec.User, spec.Password)
		if err != nil {
			return nil, err
		}
		if i > 0 && (n.User != nodes[0].User || n.Password != nodes[0].Password) {
			return nil, &topology.FieldError{Field: fmt.Sprintf("dsns[%d]", i), Value: RedactDSN(d), Reason: "every node needs the same user and password (workers connect to any node)"}
		}
		for j, o := range nodes {
			if o.Host == n.Host && o.Port == n.Port {
				return nil, &topology.FieldError{Field: fmt.Sprintf("dsns[%d]", i), Value: RedactDSN(d), Reason: fmt.Sprintf("the same address as dsns[%d]", j)}
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// registeredSpec is the spec Register records for an existing cluster: what habench
// discovered (kind, node count, flavor), the user it connects as, its ssh access, and of
// the user's spec the knobs and the sites.
func registeredSpec(spec topology.Spec, kind topology.Kind, nodes int, flavor topology.Flavor, user string, ssh *topology.SSHSpec) topology.Spec {
	return topology.Spec{Name: spec.Name, Provider: topology.ProviderExisting, Kind: kind, Nodes: nodes,
		Flavor: flavor, Knobs: spec.Knobs, Sites: spec.Sites, ExistingSpec: topology.ExistingSpec{User: user, SSH: ssh}}
}

// Register records an existing cluster: spec (provider existing, with dsns) names the
// nodes; habench connects to each (hosts per CheckExistingHost), discovers its
// flavor, version and role, infers the kind (see InferTopology), checks the spec's kind
// and flavor hints against what it found, and writes state.json under the state
// directory. Nothing is deployed, started or changed on the servers. Errors on bad input
// are *topology.FieldError (name taken, bad DSN, host not allowed, hint mismatch).
func (s *Store) Register(ctx context.Context, spec topology.Spec) (*Cluster, error) {
	spec.Provider = topology.ProviderExisting
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if len(spec.DSNs) == 0 {
		return nil, &topology.FieldError{Field: "dsns", Value: spec.Cluster, Reason: "register needs the nodes' dsns (cluster: refers to a cluster already registered)"}
	}
	nodes, err := ExistingNodes(spec)
	if err != nil {
		return nil, err
	}
	sshSpec, err := absSSHSpec(spec.SSH)
	if err != nil {
		return nil, err
	}
	dir := s.clusterDir(spec.Name)
	if _, err := os.Stat(dir); err == nil {
		return nil, &topology.FieldError{Field: "name", Value: spec.Name, Reason: fmt.Sprintf("a cluster with this name exists (habench destroy %s)", spec.Name)}
	}
	facts := make([]*NodeFacts, len(nodes))
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = net.JoinHostPort(n.Host, strconv.Itoa(n.Port))
		db, err := sql.Open("mysql", guardedDSN(n.Host, n.Port, n.User, n.Password))
		if err != nil {
			return nil, err
		}
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		facts[i], err = Discover(dctx, db)
		cancel()
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("node %s (%s): %w", topology.NodeName(i+1), addrs[i], err)
		}
		for j := range i {
			if facts[j].Identity == facts[i].Identity {
				return nil, &topology.FieldError{Field: fmt.Sprintf("dsns[%d]", i), Value: addrs[i], Reason: fmt.Sprintf("the same server as dsns[%d] (%s)", j, addrs[j])}
			}
		}
		if facts[i].Flavor != facts[0].Flavor {
			return nil, fmt.Errorf("node %s is %s %s, node n1 %s %s: one cluster has one flavor", topology.NodeName(i+1), facts[i].Flavor, facts[i].Version, facts[0].Flavor, facts[0].Version)
		}
	}
	kind, roles, err := InferTopology(facts, addrs)
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", spec.Name, err)
	}
	if spec.Kind != "" && spec.Kind != kind {
		return nil, &topology.FieldError{Field: "kind", Value: spec.Kind, Reason: fmt.Sprintf("the servers form a %s topology (%s)", kind, describeRoles(roles))}
	}
	if spec.Flavor != "" && spec.Flavor != facts[0].Flavor {
		return nil, &topology.FieldError{Field: "flavor", Value: spec.Flavor, Reason: fmt.Sprintf("the servers are %s (%s)", facts[0].Flavor, facts[0].Version)}
	}
	// Capabilities follow the oldest version in the cluster.
	oldest := facts[0]
	for _, f := range facts {
		if f.Ver.Compare(oldest.Ver) < 0 {
			oldest = f
		}
	}
	c := &Cluster{
		Name: spec.Name, ProviderName: topology.ProviderExisting, Network: NetExisting,
		User: nodes[0].User, Password: nodes[0].Password, State: "ready", Created: time.Now().UTC(),
		Binaries: &Binaries{Flavor: oldest.Flavor, Version: oldest.Ver, VersionText: oldest.Version + " (" + oldest.VersionComment + ")"},
		path:     filepath.Join(dir, "state.json"),
	}
	c.Spec = registeredSpec(spec, kind, len(nodes), oldest.Flavor, c.User, sshSpec)
	if c.Spec.Is(topology.Group) {
		c.Spec.Group.Mode = topology.GroupMultiPrimary
		if facts[0].GRSinglePrimary {
			c.Spec.Group.Mode = topology.GroupSinglePrimary
		}
	}
	for i, n := range nodes {
		c.Nodes = append(c.Nodes, &Node{Name: topology.NodeName(i + 1), Role: roles[i], ServerID: facts[i].ServerID, Host: n.Host, Port: n.Port})
		if roles[i] == topology.RoleSource && kind == topology.SemiSync {
			c.Spec.SemiSync = facts[i].SemiSync
		}
	}
	c.Caps = c.Capabilities()
	// With ssh access: every host is reached (and the key accepted) before registering.
	if err := c.CheckSSH(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := c.save(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.log().Info("registered existing cluster", "cluster", c.Name, "kind", kind, "nodes", len(c.Nodes), "roles", describeRoles(roles))
	return c, nil
}

func describeRoles(roles []topology.Role) string {
	var s []string
	for i, r := range roles {
		s = append(s, topology.NodeName(i+1)+" "+string(r))
	}
	return strings.Join(s, ", ")
}
