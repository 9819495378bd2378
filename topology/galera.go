package topology

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func init() {
	RegisterKind(KindDef{
		Kind: Galera, Existing: true, Order: 50,
		Summary: "a Galera cluster (MariaDB Galera Cluster, Percona XtraDB Cluster), every node writable",
		Defaults: func(s *Spec) {
			if s.Galera.SST == "" {
				s.Galera.SST = FlavorOf(s.Flavor).DefaultSST()
			}
		},
		Validate: func(s *Spec) error {
			if s.Nodes < GaleraMinNodes {
				return &FieldError{"nodes", s.Nodes, fmt.Sprintf("galera needs %d to %d nodes (with fewer, losing one node loses quorum)", GaleraMinNodes, MaxNodes)}
			}
			return nil
		},
		Plan:           planGalera,
		Samplers:       []string{"heartbeat", "galera", "host"},
		NoSingleWriter: func(Spec) string { return "Galera takes writes on every node: there is no single writer to follow" },
		MemberWord:     "node",
		ConflictErrors: func(Spec) ([]uint16, string) {
			return GaleraMultiWriterErrors, "a node outside the Primary component (1047) and conflicts at commit (1180)"
		},
		Deploy:         func(Spec) (time.Duration, time.Duration) { return 3 * time.Second, 3 * time.Second },
		RestartPerNode: 3 * time.Second, // IST
	})
}

// GaleraMultiWriterErrors are what writes on several Galera nodes cause by design: 1047
// (WSREP has not yet prepared node for application use: outside the Primary component) and
// 1180 (a certification conflict reported at commit).
var GaleraMultiWriterErrors = []uint16{1047, 1180}

// GaleraOptions configure a Galera cluster (kind galera).
type GaleraOptions struct {
	// SST is the state snapshot transfer method joiners use: "rsync" (default; fastest
	// here, the donor is blocked while it copies) or "mariabackup" (needs mariabackup in
	// the installation; its SST script sleeps about 10 s per joiner).
	SST string `json:"sst,omitempty" yaml:"sst,omitempty"`
	// Extra holds the keys of the galera section that kinds extending galera define
	// (KindDef.Keys, e.g. arbitrator: true); any other key is an error in Validate.
	Extra map[string]any `json:"extra,omitempty" yaml:",inline"`
}

// IsZero reports whether no galera field is set.
func (o GaleraOptions) IsZero() bool { return o.SST == "" && len(o.Extra) == 0 }

// SST methods a sandbox can use.
const (
	SSTRsync       = "rsync"
	SSTMariabackup = "mariabackup"
)

// GaleraMinNodes is the smallest Galera cluster habench deploys: with 2 nodes, losing
// either one loses quorum, so such a cluster benchmarks nothing a user runs.
const GaleraMinNodes = 3

// DefaultWsrepProvider is where Debian's galera-4 package puts the provider library, the
// path a plan uses when the installation did not say where it found one.
const DefaultWsrepProvider = "/usr/lib/galera/libgalera_smm.so"

// Galera ports when every node has its own address (network namespaces): group
// communication, incremental state transfer, state snapshot transfer.
const (
	GaleraGroupPort = 4567
	GaleraISTPort   = 4568
	GaleraSSTPort   = 4444
)

// galeraPortOffset: when nodes share one address (loopback), node i's Galera ports are its
// SQL port plus 10000 (group), 20000 (IST) and 30000 (SST).
const galeraPortOffset = 10000

// GaleraPorts are the ports a Galera node listens on besides its SQL port.
type GaleraPorts struct {
	Group, IST, SST int
}

// galeraPortsFor returns node ports: the standard ones when every node has its own host,
// else offsets from the SQL port. Error (*FieldError on "port") when an offset port would
// pass 65535.
func galeraPortsFor(sqlPort int, sharedHost bool) (GaleraPorts, error) {
	if !sharedHost {
		return GaleraPorts{GaleraGroupPort, GaleraISTPort, GaleraSSTPort}, nil
	}
	p := GaleraPorts{sqlPort + galeraPortOffset, sqlPort + 2*galeraPortOffset, sqlPort + 3*galeraPortOffset}
	if p.SST > 65535 {
		return p, &FieldError{"port", sqlPort, fmt.Sprintf("Galera nodes sharing one address listen on the SQL port + %d, + %d and + %d: want a base port of at most %d",
			galeraPortOffset, 2*galeraPortOffset, 3*galeraPortOffset, 65535-3*galeraPortOffset)}
	}
	return p, nil
}

// GaleraHostPorts are the Galera ports of a node with SQL port sqlPort on a user's host
// (spec's provider is hosts): the standard ones when every host has one node of spec,
// else offsets from the SQL port (+10000 group, +20000 IST, +30000 SST) so that the nodes
// sharing a host each have their own. Validate keeps them under 65536.
func GaleraHostPorts(spec Spec, sqlPort int) GaleraPorts {
	p, _ := galeraPortsFor(sqlPort, galeraHostsShared(spec))
	return p
}

// galeraHostsShared: a hosts spec places more than one node on a host.
func galeraHostsShared(spec Spec) bool { return spec.Nodes > len(spec.Hosts) }

// WsrepGTIDDomain is the GTID domain of the Galera write sets of cluster name
// (wsrep_gtid_domain_id): the same on every node of a cluster, and derived from the name so
// that two sandboxes replicating into each other use different domains. In 1000..9999;
// node-local transactions use gtid_domain_id = the node's index (1..9).
func WsrepGTIDDomain(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1000 + int(h.Sum32()%9000)
}

// Provider option keys habench sets itself (the user's value for the same key wins).
var (
	providerKeyRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]*$`)
	providerValueRE = regexp.MustCompile(`^[^;#'"\s\\]+$`)
)

// ProviderOption is one wsrep_provider_options entry.
type ProviderOption struct {
	Key, Value string
}

// ParseProviderOptions parses a wsrep_provider_options value: `key=value` pairs separated
// by ";" (white space around them and a trailing ";" are fine). Error (*FieldError on
// options.wsrep_provider_options with the whole value) on an entry without "=", an empty
// key or value, a key that is not a dotted name (gcs.fc_limit), a value with white space,
// quotes, "#" or "\", or a key given twice.
func ParseProviderOptions(s string) ([]ProviderOption, error) {
	bad := func(why string) error {
		return &FieldError{"options.wsrep_provider_options", s, why}
	}
	var out []ProviderOption
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, bad(fmt.Sprintf("entry %q has no \"=\": want key=value pairs separated by \";\", e.g. gcs.fc_limit=16; gcs.fc_factor=0.8", part))
		case !providerKeyRE.MatchString(k):
			return nil, bad(fmt.Sprintf("entry %q: %q is not a provider option name like gcs.fc_limit", part, k))
		case !providerValueRE.MatchString(v):
			return nil, bad(fmt.Sprintf("entry %q: want a value without white space, quotes, \"#\", \"\\\" or \";\"", part))
		case seen[k]:
			return nil, bad(fmt.Sprintf("%s is given twice", k))
		}
		seen[k] = true
		out = append(out, ProviderOption{k, v})
	}
	return out, nil
}

// MergeProviderOptions returns base with user merged in: a key in both takes the user's
// value (in base's position), keys only in user follow in the user's order. user is a
// wsrep_provider_options value as the user wrote it ("" for none); errors are
// ParseProviderOptions'.
func MergeProviderOptions(base []ProviderOption, user string) ([]ProviderOption, error) {
	u, err := ParseProviderOptions(user)
	if err != nil {
		return nil, err
	}
	uv := map[string]string{}
	for _, o := range u {
		uv[o.Key] = o.Value
	}
	out := make([]ProviderOption, 0, len(base)+len(u))
	inBase := map[string]bool{}
	for _, o := range base {
		if v, ok := uv[o.Key]; ok {
			o.Value = v
		}
		inBase[o.Key] = true
		out = append(out, o)
	}
	for _, o := range u {
		if !inBase[o.Key] {
			out = append(out, o)
		}
	}
	return out, nil
}

// FormatProviderOptions renders options as an option-file value: "k=v;k=v" in double quotes.
func FormatProviderOptions(opts []ProviderOption) string {
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o.Key + "=" + o.Value
	}
	return `"` + strings.Join(parts, ";") + `"`
}

// galeraApplierAliases are the user option names of the applier thread count; the plan
// writes them under the name the server knows (Capabilities.WsrepApplierThreadsVar).
var galeraApplierAliases = map[string]bool{"wsrep_slave_threads": true, "wsrep_applier_threads": true}

// galeraReserved are options the Galera plan sets from the topology (addresses, identity,
// GTID domains, SST method): overriding them would break the cluster or its bootstrap.
var galeraReserved = map[string]string{
	"wsrep_on": "", "wsrep_provider": "", "wsrep_cluster_address": "", "wsrep_cluster_name": "",
	"wsrep_node_address": "", "wsrep_node_name": "", "wsrep_node_incoming_address": "",
	"wsrep_sst_receive_address": "", "wsrep_gtid_mode": "", "wsrep_gtid_domain_id": "",
	"wsrep_sst_method": " (use galera.sst)", "wsrep_sst_auth": "",
}

// planGalera: every node is a writable Galera node (RoleNode). n1 bootstraps a new cluster
// (--wsrep-new-cluster as a start argument, so a restart rejoins), the sandbox users are
// created on n1 (replicated, and copied to joiners by SST), then n2, n3, ... start one after
// the other as joiners, each waiting until it is Synced in a Primary component of i nodes.
//
// Options on every node (MariaDB): wsrep_on, wsrep_provider (Capabilities.WsrepProvider or
// DefaultWsrepProvider), wsrep_cluster_name (the cluster name), wsrep_cluster_address
// gcomm://<every node's host:group port>, wsrep_node_name/_address, wsrep_sst_method
// (galera.sst) and wsrep_sst_receive_address, wsrep_provider_options with gmcast.listen_addr
// and ist.recv_addr on the node's address merged with the user's options.wsrep_provider_options
// (the user wins per key); binlog_format=ROW, innodb_autoinc_lock_mode=2,
// default_storage_engine=InnoDB; a binary log with log_slave_updates and wsrep_gtid_mode=ON,
// wsrep_gtid_domain_id = WsrepGTIDDomain(name) (every node), gtid_domain_id = node index (its
// local, non-replicated transactions), so every node gives a write set the same GTID.
// MySQL-like flavors (PXC): gtid_mode=ON and enforce_gtid_consistency=ON instead of the
// MariaDB GTID options. wsrep_sst_auth=root: when the flavor's SST method needs it
// (SSTMethod.NeedsAuth); then the flavor's own lines (GaleraFlavor.NodeOptions: PXC's
// pxc_strict_mode, pxc_encrypt_cluster_traffic), then the user's options.
//
// User options wsrep_slave_threads / wsrep_applier_threads are written under the server's
// name for its version (Capabilities.WsrepApplierThreadsVar).
func planGalera(spec Spec, caps Capabilities, addr Addr) (Plan, error) {
	var p Plan
	na, members, err := galeraAddrs(spec, addr)
	if err != nil {
		return Plan{}, err
	}
	provider := caps.WsrepProvider
	if provider == "" {
		provider = DefaultWsrepProvider
	}
	sst := spec.Galera.SST
	if sst == "" {
		sst = FlavorOf(caps.Flavor).DefaultSST()
	}
	for i := 1; i <= spec.Nodes; i++ {
		n, err := galeraNodePlan(spec, caps, i, na[i-1], members, provider, sst)
		if err != nil {
			return Plan{}, err
		}
		p.Nodes = append(p.Nodes, n)
	}
	p.Steps = append(p.Steps,
		Step{Node: "n1", Desc: "bootstrap a new cluster", Start: true, Wait: WaitSynced, ClusterSize: 1},
		Step{Node: "n1", Desc: "create users", SQL: galeraUsersSQL(spec)},
	)
	for i := 2; i <= spec.Nodes; i++ {
		p.Steps = append(p.Steps, Step{Node: NodeName(i), Desc: "join (state transfer by " + sst + ")", Start: true, Wait: WaitSynced, ClusterSize: i})
	}
	if !hasProviderOption(mustParse(userProviderOptions(spec)), joinRetransKey) {
		for _, n := range p.Nodes {
			p.Steps = append(p.Steps, Step{Node: n.Name, Desc: "restore " + joinRetransKey,
				SQL: []string{caps.SetProviderOption(joinRetransKey, defaultJoinRetrans)}})
		}
	}
	return p, nil
}

// galeraNodeAddr is where a Galera node listens: its host, its client port and the
// Galera ports derived from it.
type galeraNodeAddr struct {
	host  string
	port  int
	ports GaleraPorts
}

// galeraAddrs returns the address of every node of spec (n1 first) and the host:group
// port members of wsrep_cluster_address. Nodes sharing a host get distinct Galera ports
// (galeraPortsFor); its error is returned.
func galeraAddrs(spec Spec, addr Addr) ([]galeraNodeAddr, []string, error) {
	hosts := map[string]bool{}
	var na []galeraNodeAddr
	for i := 1; i <= spec.Nodes; i++ {
		h, port := addr(NodeName(i))
		hosts[h] = true
		na = append(na, galeraNodeAddr{host: h, port: port})
	}
	shared := len(hosts) < spec.Nodes
	if spec.IsHosts() {
		shared = galeraHostsShared(spec) // GaleraHostPorts
	}
	var members []string
	for i := range na {
		ports, err := galeraPortsFor(na[i].port, shared)
		if err != nil {
			return nil, nil, err
		}
		na[i].ports = ports
		members = append(members, hostPort(na[i].host, ports.Group))
	}
	return na, members, nil
}

// galeraNodePlan plans node i (1-based) at a: its options (as planGalera describes) and
// its start arguments (n1 bootstraps, the others join with an empty datadir; the deploy
// shortens the EVS join retransmission unless the user set it). Errors: the user's
// wsrep_provider_options that do not parse.
func galeraNodePlan(spec Spec, caps Capabilities, i int, a galeraNodeAddr, members []string, provider, sst string) (NodePlan, error) {
	n := NodePlan{Name: NodeName(i), Role: RoleNode, ServerID: i}
	o := []Option{
		{"server_id", strconv.Itoa(i)},
		{"log_bin", "binlog"},
		{"relay_log", "relay"},
		{caps.LogReplicaUpdates(), "ON"},
		{"binlog_format", "ROW"},
		{"skip_name_resolve", "ON"},
		{"default_storage_engine", "InnoDB"},
		{"innodb_autoinc_lock_mode", "2"},
	}
	if caps.GTIDKind == GTIDMySQL {
		o = append(o, Option{"gtid_mode", "ON"}, Option{"enforce_gtid_consistency", "ON"})
	} else {
		o = append(o,
			Option{"gtid_domain_id", strconv.Itoa(i)},
			Option{"wsrep_gtid_mode", "ON"},
			Option{"wsrep_gtid_domain_id", strconv.Itoa(WsrepGTIDDomain(spec.Name))},
		)
	}
	popts, err := MergeProviderOptions([]ProviderOption{
		{"gmcast.listen_addr", "tcp://" + hostPort(a.host, a.ports.Group)},
		{"ist.recv_addr", hostPort(a.host, a.ports.IST)},
	}, userProviderOptions(spec))
	if err != nil {
		return NodePlan{}, err
	}
	o = append(o,
		Option{"wsrep_on", "ON"},
		Option{"wsrep_provider", provider},
		Option{"wsrep_cluster_name", spec.Name},
		Option{"wsrep_cluster_address", "gcomm://" + strings.Join(members, ",")},
		Option{"wsrep_node_name", n.Name},
		Option{"wsrep_node_address", hostPort(a.host, a.ports.Group)},
		Option{"wsrep_sst_method", sst},
		Option{"wsrep_sst_receive_address", hostPort(a.host, a.ports.SST)},
		Option{"wsrep_provider_options", FormatProviderOptions(popts)},
	)
	if m, ok := sstMethodAny(caps.Flavor, sst); ok && m.NeedsAuth(caps.Version) {
		// The donor's backup tool connects to its own server over the socket as root
		// (no password in a sandbox).
		o = append(o, Option{"wsrep_sst_auth", "root:"})
	}
	if g := FlavorOf(caps.Flavor).Galera; g != nil && g.NodeOptions != nil {
		o = append(o, g.NodeOptions(spec, caps, i)...)
	}
	for _, uo := range userOptions(spec) {
		switch name := normOption(uo.Name); {
		case name == "wsrep_provider_options":
			continue // merged above
		case galeraApplierAliases[name]:
			uo.Name = caps.WsrepApplierThreadsVar()
		}
		o = append(o, uo)
	}
	n.Options = o
	if i == 1 {
		n.StartArgs = []string{"--wsrep-new-cluster"}
	} else {
		n.EmptyDatadir = true
	}
	if !hasProviderOption(popts, joinRetransKey) {
		// For the deploy only: membership forms in steps of the EVS join
		// retransmission period; the option file keeps the provider's default and
		// the last steps set it back at run time.
		n.StartArgs = append(n.StartArgs, "--wsrep-provider-options="+strings.Trim(FormatProviderOptions(append(popts, ProviderOption{joinRetransKey, deployJoinRetrans})), `"`))
	}
	return n, nil
}

// The EVS join retransmission period: the provider's default, and what habench uses while
// it forms the cluster (every membership step waits for it; a 3-node deploy takes about 4 s
// less). Not used when the user sets it.
const (
	joinRetransKey     = "evs.join_retrans_period"
	defaultJoinRetrans = "PT1S"
	deployJoinRetrans  = "PT0.1S"
)

func hasProviderOption(opts []ProviderOption, key string) bool {
	for _, o := range opts {
		if o.Key == key {
			return true
		}
	}
	return false
}

// mustParse parses provider options already checked by the plan (nil on error).
func mustParse(s string) []ProviderOption {
	o, _ := ParseProviderOptions(s)
	return o
}

// galeraUsersSQL creates the benchmark user on the bootstrap node. Unlike the replicated
// kinds the statements are binlogged and replicated (there is no replica user: Galera
// needs none for rsync SST); joiners started later get them with the snapshot anyway.
func galeraUsersSQL(spec Spec) []string {
	return []string{
		fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s'", BenchUser, spec.Credentials.BenchPass()),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION", BenchUser),
	}
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// normOption is an option name as the server compares it: dashes as underscores, without
// a loose_ prefix.
func normOption(k string) string {
	return strings.TrimPrefix(strings.ReplaceAll(k, "-", "_"), "loose_")
}

// userProviderOptions is the user's wsrep_provider_options (however spelled), "" if none.
func userProviderOptions(spec Spec) string {
	for k, v := range spec.Options {
		if normOption(k) == "wsrep_provider_options" {
			return v
		}
	}
	return ""
}
