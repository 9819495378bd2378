package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Endpoint is one MySQL server address. Socket, when set, wins over Host and
// Port. Name labels the endpoint in per-endpoint statistics; empty means
// "host:port" (or the socket path).
type Endpoint struct {
	Name   string
	Host   string
	Port   int
	Socket string
}

// Label returns Name, or the address when Name is empty.
func (e Endpoint) Label() string {
	if e.Name != "" {
		return e.Name
	}
	return e.addr()
}

func (e Endpoint) addr() string {
	if e.Socket != "" {
		return e.Socket
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// Target is where a workload runs: worker i connects to
// Endpoints[i % len(Endpoints)], like sysbench's --mysql-host list. Prepare
// and Cleanup use Endpoints[0] only (the writable primary by convention).
type Target struct {
	// Endpoints has at least one element.
	Endpoints []Endpoint
	// ReadEndpoints, when not empty, receive the read-only statements of every event
	// (worker i reads on ReadEndpoints[i % n]) while writes, BEGIN and COMMIT go to
	// Endpoints, and each event that changed a row is followed by a read-your-writes
	// check on the read endpoint (see readnodes.go).
	ReadEndpoints []Endpoint
	// Follow, when set, makes the workers follow the writer: at every reconnect a worker
	// asks Follow for the endpoint that takes writes now (a group's new primary, a
	// promoted replica) and connects there. Connection failures and read-only refusals
	// (1290, 1792, 3100) are then retried like ignored errors, and the outage windows are
	// the writer's ("writer"), not a node's. Follow is called often while the writer is
	// down; it should cache.
	Follow func(ctx context.Context) (Endpoint, error)
	// Failover, when set, makes the workers fail over between Endpoints, every one of which
	// takes writes (a Galera cluster, a multi-primary group), as a client with a host list
	// does (failover.go): a worker whose node fails (its connection lost, a refusal of a node
	// that is not part of its cluster now, mysqlerr.NotPartOfCluster: 1047, 1290, 1792,
	// 3100, or an event hung for Options.WriterHang while Failover does not list its node)
	// reconnects to another endpoint Failover lists, and goes back to its own
	// (Endpoints[i % n]) between two transactions once Failover lists it again in an
	// answer given after the worker left it (a view still stale from before the failure
	// does not send it back). Those failures are retried like ignored errors; the outage
	// windows stay those of the worker's own endpoint. Failover(since) returns the labels
	// of the endpoints live in their latest answers, given at or after since (the zero
	// time: whenever), and known, false while the view is not known yet (every endpoint is
	// then tried in turn). Known and none live (a cluster without quorum, every node
	// down) keeps each worker where it is, retrying there with a back-off, with no move:
	// there is nowhere better to go. It must answer at once (a view a poller keeps): it is
	// asked after failures, by the hang watchdog and by workers away from their own
	// endpoint, never while a worker at home commits. Not with Follow.
	Failover func(since time.Time) (live []string, known bool)
	// User, Password and DB are the credentials and the database (created by
	// Prepare if missing).
	User, Password, DB string
	// Dial, when set, dials the TCP endpoints (network "tcp", addr
	// "host:port"), for example to route through a userspace link. It is
	// given to the driver as the connector's Config.DialFunc, which has the
	// effect of a network registered with mysql.RegisterDialContext without
	// touching the driver's global registry.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Validate checks that the target has endpoints with addresses and a database name.
func (t Target) Validate() error {
	if len(t.Endpoints) == 0 {
		return errors.New("target: no endpoints")
	}
	for i, e := range t.Endpoints {
		if e.Socket == "" && (e.Host == "" || e.Port < 1 || e.Port > 65535) {
			return fmt.Errorf("target: endpoint %d (%q): want a socket or a host and a port in 1..65535", i, e.Name)
		}
	}
	for i, e := range t.ReadEndpoints {
		if e.Socket == "" && (e.Host == "" || e.Port < 1 || e.Port > 65535) {
			return fmt.Errorf("target: read endpoint %d (%q): want a socket or a host and a port in 1..65535", i, e.Name)
		}
	}
	if t.DB == "" {
		return errors.New("--mysql-db \"\": want a database name")
	}
	if t.Follow != nil && t.Failover != nil {
		return errors.New("target: Follow and Failover together: the workers follow one writer or fail over between writers")
	}
	return nil
}

// session opens pools for one Prepare/Run/Cleanup call. Every connection is
// dialled by session.dial (Config.DialFunc: no global driver registration),
// which uses Target.Dial for TCP when set, turns a TCP or unix socket into
// a blocking one (blocking, blockconn_linux.go; a conn of Target.Dial that
// is not a socket stays as it is) and records the net.Conn in the connSlot
// carried by the dial context, so that a run can close a worker's socket to
// abandon a hung statement.
type session struct {
	t Target
}

func newSession(t Target) *session { return &session{t: t} }

func (s *session) close() {}

// slotKey is the context key of the *connSlot a dial records its conn in.
type slotKey struct{}

// connSlot holds a worker's current socket.
type connSlot struct {
	mu     sync.Mutex
	c      net.Conn
	killed bool
}

func (sl *connSlot) set(c net.Conn) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.killed {
		c.Close()
	}
	sl.c = c
}

// kill closes the current socket and every later one: statements blocked on
// it fail at once.
func (sl *connSlot) kill() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.killed = true
	if sl.c != nil {
		sl.c.Close()
	}
}

// close closes the current socket only (a later one is kept): the statement blocked on
// it fails at once and the worker can reconnect (see watchHangs).
func (sl *connSlot) close() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.c != nil {
		sl.c.Close()
	}
}

func (s *session) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if network == "tcp" && s.t.Dial != nil {
		c, err = s.t.Dial(ctx, network, addr)
	} else {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	// A blocking socket (blockconn_linux.go): the worker sleeps in read(2)
	// like a sysbench thread instead of going through the netpoller.
	c = blocking(c)
	if sl, ok := ctx.Value(slotKey{}).(*connSlot); ok {
		sl.set(c)
	}
	return c, nil
}

// open returns a pool for one endpoint and database db ("" = none).
func (s *session) open(e Endpoint, db string, interpolate bool) (*sql.DB, error) {
	c := mysql.NewConfig()
	c.User = s.t.User
	c.Passwd = s.t.Password
	c.DBName = db
	c.InterpolateParams = interpolate
	c.Timeout = 10 * time.Second
	c.DialFunc = s.dial
	// Lost connections are counted as reconnects; the driver's own log lines
	// ("unexpected EOF") would only interleave with the sysbench-format output.
	c.Logger = quietLogger{}
	if e.Socket != "" {
		c.Net, c.Addr = "unix", e.Socket
	} else {
		c.Net, c.Addr = "tcp", e.addr()
	}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", e.Label(), err)
	}
	return sql.OpenDB(conn), nil
}

// quietLogger discards the driver's log lines.
type quietLogger struct{}

func (quietLogger) Print(...any) {}

// quoteIdent quotes a MySQL identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
