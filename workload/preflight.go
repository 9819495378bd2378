package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// StartReporter is a Reporter that also hears about the start of a run. Run calls Note for
// each pre-flight note (one line without a newline, e.g. the fall-back to client-side
// statements) and Started once, after pre-flight and after every worker has connected and
// prepared its statements, just before the clock starts: where sysbench prints "Threads
// started!" (see PrintThreadsStarted). Neither is called when the run fails before that.
type StartReporter interface {
	Reporter
	Note(msg string)
	Started()
}

// serverLimits are what pre-flight reads from one server.
type serverLimits struct {
	maxConnections, threadsConnected int64
	maxPrepared, preparedInUse       int64
}

// preflight connects once to every endpoint before any worker starts and checks that the
// run fits the servers: threads per server against max_connections minus the connections
// in use (Threads_connected, less pre-flight's own), and, in ps mode, threads x prepared
// statements per connection against max_prepared_stmt_count minus Prepared_stmt_count.
// Too few connections is an error naming the variable, its value and what the run needs;
// too few prepared statements returns a note and psFallback: the run then uses
// client-side statements (sysbench would fail with error 1461 instead). An endpoint that
// cannot be reached fails like sysbench: "unable to connect to MySQL server on host
// 'H', port P, aborting...: error 2003: Can't connect to MySQL server on 'H' (111)".
// stmts is the number of statements each connection prepares.
func preflight(ctx context.Context, sess *session, t Target, o Options, stmts int) (note string, psFallback bool, err error) {
	type server struct {
		ep      Endpoint // the first endpoint with this address
		threads int
		lim     serverLimits
	}
	var servers []*server
	byAddr := map[string]*server{}
	for i := 0; i < o.Threads; i++ {
		ep := t.Endpoints[i%len(t.Endpoints)]
		s := byAddr[ep.addr()]
		if s == nil {
			s = &server{ep: ep}
			byAddr[ep.addr()] = s
			servers = append(servers, s)
		}
		s.threads++
	}
	for _, s := range servers {
		lim, err := readLimits(ctx, sess, s.ep, t.DB)
		if err != nil {
			return "", false, err
		}
		s.lim = lim
	}
	for _, s := range servers {
		free := s.lim.maxConnections - s.lim.threadsConnected
		if int64(s.threads) > free {
			return "", false, fmt.Errorf("--threads %d: %s has max_connections=%d with %d in use; the run needs %d",
				o.Threads, s.ep.Label(), s.lim.maxConnections, s.lim.threadsConnected, s.threads)
		}
	}
	if o.PSMode != PSAuto || stmts == 0 {
		return "", false, nil
	}
	for _, s := range servers {
		need := int64(s.threads) * int64(stmts)
		if need > s.lim.maxPrepared-s.lim.preparedInUse {
			return fmt.Sprintf("--db-ps-mode auto: %s has max_prepared_stmt_count=%d with %d in use; the run needs %d (%d threads x %d statements): using client-side statements, as with --db-ps-mode disable",
				s.ep.Label(), s.lim.maxPrepared, s.lim.preparedInUse, need, s.threads, stmts), true, nil
		}
	}
	return "", false, nil
}

// Reachable connects once to every endpoint of t (with its credentials and database) and
// returns nil, or the first failure as sysbench reports it: "unable to connect to MySQL
// server on host 'H', port P, aborting...: error 2003: Can't connect to MySQL server on
// 'H' (111)" (prefixed with the endpoint's name when it has one; the error unwraps to a
// *ConnError or *mysql.MySQLError). Run does the same in its pre-flight; a caller that
// does work before Run (reading the servers' variables) checks first with Reachable.
func Reachable(ctx context.Context, t Target) error {
	if err := t.Validate(); err != nil {
		return err
	}
	sess := newSession(t)
	defer sess.close()
	for _, ep := range t.Endpoints {
		pool, err := sess.open(ep, t.DB, true)
		if err != nil {
			return err
		}
		err = pool.PingContext(ctx)
		pool.Close()
		if err != nil {
			return unableToConnect(ep, connectError(ep, err))
		}
	}
	return nil
}

// readLimits connects to ep once and reads its limits; the connection is closed again.
func readLimits(ctx context.Context, sess *session, ep Endpoint, db string) (serverLimits, error) {
	var lim serverLimits
	pool, err := sess.open(ep, db, true)
	if err != nil {
		return lim, err
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx)
	if err != nil {
		return lim, unableToConnect(ep, connectError(ep, err))
	}
	defer conn.Close()
	// SHOW, not SELECT: pre-flight must not move the Com_select a run is checked against.
	read := func(q string) (map[string]int64, error) {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("%s: pre-flight: %s: %w", ep.Label(), q, err)
		}
		defer rows.Close()
		m := map[string]int64{}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				return nil, fmt.Errorf("%s: pre-flight: %w", ep.Label(), err)
			}
			m[strings.ToLower(k)], _ = strconv.ParseInt(v, 10, 64)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("%s: pre-flight: %w", ep.Label(), err)
		}
		return m, nil
	}
	vars, err := read("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('max_connections', 'max_prepared_stmt_count')")
	if err != nil {
		return lim, err
	}
	status, err := read("SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_connected', 'Prepared_stmt_count')")
	if err != nil {
		return lim, err
	}
	lim.maxConnections, lim.maxPrepared = vars["max_connections"], vars["max_prepared_stmt_count"]
	lim.threadsConnected = max(status["threads_connected"]-1, 0) // less this connection
	lim.preparedInUse = status["prepared_stmt_count"]
	return lim, nil
}

// unableToConnect is sysbench's two FATAL lines on one line: "unable to connect to MySQL
// server on host 'H', port P, aborting...: error CODE: MESSAGE", prefixed with the
// endpoint's name when it has one.
func unableToConnect(ep Endpoint, err error) error {
	where := fmt.Sprintf("host '%s', port %d", ep.Host, ep.Port)
	if ep.Socket != "" {
		where = fmt.Sprintf("socket '%s'", ep.Socket)
	}
	prefix := ""
	if ep.Name != "" && ep.Name != ep.addr() {
		prefix = ep.Name + ": "
	}
	detail := err.Error()
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		detail = fmt.Sprintf("error %d: %s", me.Number, me.Message)
	}
	return &preflightError{msg: fmt.Sprintf("%sunable to connect to MySQL server on %s, aborting...: %s", prefix, where, detail), err: err}
}

// preflightError is a pre-flight failure: its text, and the error underneath (a
// *ConnError or *mysql.MySQLError for connection failures).
type preflightError struct {
	msg string
	err error
}

func (e *preflightError) Error() string { return e.msg }
func (e *preflightError) Unwrap() error { return e.err }

// countStatements is the number of statements a connection prepares (non-empty texts).
func countStatements(texts []string) int {
	n := 0
	for _, t := range texts {
		if t != "" {
			n++
		}
	}
	return n
}
