package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/topology"
)

// A new Galera cluster of a local sandbox needs no state transfer: every node starts from
// one datadir at one Galera position, its seed, which is either a data snapshot's or the
// installation's initialised datadir once committed through a one-node Galera cluster
// (galeraTemplate, made once and cached beside the plain template). The bootstrap node
// starts from it safe to bootstrap; the joiners start from the same data at the same time
// and join by IST alone (the few write sets since the position: configuration changes and
// the accounts), with the state transfer method habench_noop for that first start
// (noopSSTScript), which copies nothing; once joined, each gets its configured method back.
// A deployment whose joiners started empty took a full rsync SST each, one after the
// other (about 7 s each on a 2-core machine for an empty cluster).

// NoopSSTMethod is the state transfer method of a seeded joiner's first start.
const NoopSSTMethod = "habench_noop"

// noopSSTScript is wsrep_sst_habench_noop, MariaDB's state transfer script protocol
// (wsrep_sst_common): the joiner says it is ready and reports its own position (the seed's,
// written in its datadir as habench-sst-position: "uuid:seqno domain"); the donor is only
// ever asked for an IST (--bypass), says "continue" and "done". A donor asked for a full
// transfer fails it, loudly: the joiner's data would not be the donor's.
const noopSSTScript = `#!/bin/sh
# written by habench: the state transfer of a Galera joiner whose data is already the
# donor's (a new deployment's nodes start from one seed datadir at one position); nothing
# is copied, the write sets since that position arrive by IST.
role=""; datadir=""; gtid=""; domain=""; addr=""; bypass=0
while [ $# -gt 0 ]; do
  case "$1" in
    --role) role=$2; shift;;
    --datadir) datadir=$2; shift;;
    --gtid) gtid=$2; shift;;
    --gtid-domain-id) domain=$2; shift;;
    --address) addr=$2; shift;;
    --bypass) bypass=1;;
  esac
  shift
done
case "$role" in
  joiner)
    echo "ready ${addr}/habench_noop"
    cat "$datadir/habench-sst-position" || exit 2
    exit 0;;
  donor)
    if [ "$bypass" != 1 ]; then
      echo "habench_noop: a full state transfer was requested; this method only serves IST (the joiner's seed is not this donor's history)" >&2
      exit 1
    fi
    echo continue
    echo "done $gtid $domain"
    exit 0;;
esac
echo "habench_noop: unknown role '$role'" >&2
exit 1
`

// galeraSeed is where a deployment's Galera nodes start: dir's data (a directory holding
// data/) at position "uuid:seqno".
type galeraSeed struct {
	dir      string
	position string
}

// galeraSeedable says whether a deployment with bins can seed its joiners: MariaDB (its
// SST script protocol; a joiner takes its position from InnoDB after an IST) with a Galera
// provider.
func galeraSeedable(b *Binaries) bool {
	return b != nil && b.Flavor == topology.MariaDB && b.WsrepProvider != ""
}

// seedFor returns the seed of a Galera deployment of c with the plain template tmpl: the
// snapshot's when it deploys from one, else the installation's Galera template; nil when
// c is not a Galera kind, its installation cannot seed joiners or s.GaleraJoinBySST.
func (s *Store) seedFor(ctx context.Context, c *Cluster, tmpl string) (*galeraSeed, error) {
	if !isGaleraKind(c.Spec.Kind) || !galeraSeedable(c.Binaries) || s.GaleraJoinBySST {
		return nil, nil
	}
	if s.snapshot != nil {
		if s.snapshot.GaleraPosition == "" {
			return nil, nil
		}
		return &galeraSeed{dir: s.snapshot.dir, position: s.snapshot.GaleraPosition}, nil
	}
	return s.galeraTemplate(ctx, c.Binaries, tmpl)
}

// seedJoins changes a Galera plan for joiners that start from the seed: none starts
// empty, each starts with NoopSSTMethod as soon as the one before it is in the cluster
// (it accepts connections once it has its position: a second or so, not its whole join;
// joiners started at the same moment make each other's membership retry for seconds),
// then each waits to be Synced in the whole cluster, and a last step per joiner sets
// wsrep_sst_method back to its option file's.
func seedJoins(plan *topology.Plan) {
	var joiners []string
	var restore []topology.Step
	for i := range plan.Nodes {
		np := &plan.Nodes[i]
		if !np.EmptyDatadir {
			continue
		}
		np.EmptyDatadir = false
		np.StartArgs = append(np.StartArgs, "--wsrep-sst-method="+NoopSSTMethod)
		joiners = append(joiners, np.Name)
		method := ""
		for _, o := range np.Options {
			if o.Name == "wsrep_sst_method" {
				method = o.Value
			}
		}
		restore = append(restore, topology.Step{Node: np.Name, Desc: "restore wsrep_sst_method",
			SQL: []string{"SET GLOBAL wsrep_sst_method='" + method + "'"}})
	}
	var steps, synced []topology.Step
	for _, st := range plan.Steps {
		if st.Start && slices.Contains(joiners, st.Node) {
			wait := st
			st.Desc, st.Wait, st.ClusterSize = "join (IST from the seed's position)", topology.WaitNone, 0
			wait.Start, wait.Desc, wait.ClusterSize = false, "joined: Synced", len(plan.Nodes)
			synced = append(synced, wait)
		}
		if !st.Start && len(synced) > 0 {
			steps, synced = append(steps, synced...), nil
		}
		steps = append(steps, st)
	}
	plan.Steps = append(append(steps, synced...), restore...)
}

// seedNode gives node n of c the seed's Galera state: grastate.dat at the seed's position
// (safe to bootstrap on the node that bootstraps), its position for noopSSTScript and the
// script in the node's bin directory (first on the server's PATH, galeraEnv).
func seedNode(c *Cluster, n *Node, np topology.NodePlan, seed *galeraSeed) error {
	data := filepath.Join(n.Dir, "data")
	bootstrap := slices.Contains(np.StartArgs, "--wsrep-new-cluster")
	if err := os.WriteFile(filepath.Join(data, "grastate.dat"), []byte(GaleraState(seed.position, bootstrap)), 0o660); err != nil {
		return err
	}
	pos := fmt.Sprintf("%s %d\n", seed.position, topology.WsrepGTIDDomain(c.Spec.Name))
	if err := os.WriteFile(filepath.Join(data, "habench-sst-position"), []byte(pos), 0o640); err != nil {
		return err
	}
	bin := filepath.Join(n.Dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bin, "wsrep_sst_"+NoopSSTMethod), []byte(noopSSTScript), 0o755)
}

// galeraTemplate returns the installation's Galera template, made once from the plain
// template tmpl (a host path holding data/) and cached beside it as tmpl+"-galera": the
// datadir after a one-node Galera cluster bootstrapped on it and stopped cleanly, so
// InnoDB records its Galera position (a MariaDB joiner takes its position from InnoDB
// after an IST), without the node's identity (scrubIdentity), and the position.
func (s *Store) galeraTemplate(ctx context.Context, bins *Binaries, tmpl string) (*galeraSeed, error) {
	dir := tmpl + "-galera"
	if seed, err := readGaleraTemplate(dir); err == nil {
		return seed, nil
	}
	unlock, err := lockFile(dir+".lock", false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if seed, err := readGaleraTemplate(dir); err == nil {
		return seed, nil
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := copyDatadir(filepath.Join(tmpl, "data"), filepath.Join(dir, "data")); err != nil {
		return nil, err
	}
	start := time.Now()
	pos, err := bootstrapOnce(ctx, bins, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("galera template: %w", err)
	}
	if err := scrubIdentity(filepath.Join(dir, "data")); err != nil {
		return nil, err
	}
	for _, f := range []string{"init.cnf", "init.log", "init.sock", "init.pid"} {
		os.Remove(filepath.Join(dir, f))
	}
	if err := os.WriteFile(filepath.Join(dir, "position"), []byte(pos+"\n"), 0o644); err != nil {
		return nil, err
	}
	s.log().Debug("galera template made", "dir", dir, "position", pos, "elapsed", time.Since(start).Round(time.Millisecond))
	return readGaleraTemplate(dir)
}

// readGaleraTemplate reads a made Galera template (its position file is written last).
func readGaleraTemplate(dir string) (*galeraSeed, error) {
	b, err := os.ReadFile(filepath.Join(dir, "position"))
	if err != nil {
		return nil, err
	}
	pos := strings.TrimSpace(string(b))
	if !strings.Contains(pos, ":") {
		return nil, fmt.Errorf("%s: no position", filepath.Join(dir, "position"))
	}
	return &galeraSeed{dir: dir, position: pos}, nil
}

// bootstrapOnce starts the server of bins on dir/data (a host path) as a one-node Galera
// cluster (Galera's ports on 127.0.0.1, free ones; no SQL networking), waits until it is
// Synced, stops it with SHUTDOWN and returns the position grastate.dat then records. At
// most a minute; the server is killed on any error.
func bootstrapOnce(ctx context.Context, bins *Binaries, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	server := bins.ServerPath(dir)
	ports, err := freeLoopbackPorts(2)
	if err != nil {
		return "", err
	}
	cnf := fmt.Sprintf("[mysqld]\n%sdatadir=%s/data\nlog-error=%s/init.log\nsocket=%s/init.sock\npid-file=%s/init.pid\nskip-networking\n"+
		"wsrep_on=ON\nwsrep_provider=%s\nwsrep_cluster_address=gcomm://\nwsrep_cluster_name=habench-template\n"+
		"wsrep_node_address=127.0.0.1:%d\nwsrep_provider_options=\"gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d\"\n"+
		"binlog_format=ROW\ninnodb_autoinc_lock_mode=2\n",
		userLine(), server, server, server, server, bins.WsrepProvider, ports[0], ports[0], ports[1])
	if bins.Basedir != "" {
		cnf += "basedir=" + bins.Basedir + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "init.cnf"), []byte(cnf), 0o644); err != nil {
		return "", err
	}
	cmd := bins.Command("", bins.Server, "--defaults-file="+filepath.Join(server, "init.cnf"), "--wsrep-new-cluster")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fail := func(err error) (string, error) {
		cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(filepath.Join(dir, "init.log"))
		return "", fmt.Errorf("%w\n%s%s", err, out.String(), tail(string(log), 20))
	}
	db, err := socketDB(filepath.Join(dir, "init.sock"))
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	if err := waitTemplateSynced(ctx, db, exited); err != nil {
		return fail(err)
	}
	if _, err := db.ExecContext(ctx, "SHUTDOWN"); err != nil {
		return fail(fmt.Errorf("shutdown: %w", err))
	}
	select {
	case <-exited:
	case <-ctx.Done():
		return fail(fmt.Errorf("the server did not stop after SHUTDOWN: %w", ctx.Err()))
	}
	return galeraPosition(filepath.Join(dir, "data", "grastate.dat"))
}

// waitTemplateSynced polls db every 50 ms until wsrep_local_state_comment is Synced; it
// ends early when the server exits.
func waitTemplateSynced(ctx context.Context, db *sql.DB, exited <-chan error) error {
	for {
		var name, state string
		err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state)
		if err == nil && state == "Synced" {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("the server exited (%v)", werr)
		case <-ctx.Done():
			return fmt.Errorf("not Synced (%q, %v): %w", state, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// socketDB opens root without a password over the unix socket at host path sock.
func socketDB(sock string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", sock
	cfg.Timeout = 2 * time.Second
	return sql.Open("mysql", cfg.FormatDSN())
}

// freeLoopbackPorts returns n TCP ports on 127.0.0.1 that were free a moment ago.
func freeLoopbackPorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("no free loopback port"), err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
