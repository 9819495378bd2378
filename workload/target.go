package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
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
	// User, Password and DB are the credentials and the database (created by
	// Prepare if missing).
	User, Password, DB string
	// Dial, when set, is registered with mysql.RegisterDialContext under a
	// unique network name for the duration of a call, and used for the TCP
	// endpoints (for example to route through a userspace link).
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
	if t.DB == "" {
		return errors.New("--mysql-db \"\": want a database name")
	}
	return nil
}

var dialSeq atomic.Int64

// session holds the per-call driver registrations of a Target.
type session struct {
	t       Target
	dialNet string
}

func newSession(t Target) *session {
	s := &session{t: t}
	if t.Dial != nil {
		s.dialNet = fmt.Sprintf("habench-dial-%d", dialSeq.Add(1))
		mysql.RegisterDialContext(s.dialNet, func(ctx context.Context, addr string) (net.Conn, error) {
			return t.Dial(ctx, "tcp", addr)
		})
	}
	return s
}

func (s *session) close() {
	if s.dialNet != "" {
		mysql.DeregisterDialContext(s.dialNet)
	}
}

// open returns a pool for one endpoint and database db ("" = none).
func (s *session) open(e Endpoint, db string, interpolate bool) (*sql.DB, error) {
	c := mysql.NewConfig()
	c.User = s.t.User
	c.Passwd = s.t.Password
	c.DBName = db
	c.InterpolateParams = interpolate
	c.Timeout = 10 * time.Second
	switch {
	case e.Socket != "":
		c.Net, c.Addr = "unix", e.Socket
	case s.dialNet != "":
		c.Net, c.Addr = s.dialNet, e.addr()
	default:
		c.Net, c.Addr = "tcp", e.addr()
	}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", e.Label(), err)
	}
	return sql.OpenDB(conn), nil
}

// quoteIdent quotes a MySQL identifier with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
