package workload

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

// StatementError is a statement failure that ended a run: an error whose
// MySQL code is not in the ignore list.
type StatementError struct {
	// Workload and Endpoint (label) where it happened.
	Workload, Endpoint string
	// Statement is the statement text (with ? placeholders).
	Statement string
	// Code is the MySQL error code: the server's, or the client code of a lost
	// connection (2006 gone away, 2013 lost during the statement); 0 for other errors.
	Code uint16
	// Err is the underlying error.
	Err error
}

// Error names the workload, statement, endpoint and MySQL error code (with
// libmysqlclient's text for a client code such as 2013).
func (e *StatementError) Error() string {
	if txt := clientCodes[e.Code]; txt != "" && e.Code != CRConnectionError && e.Code != CRConnHostError {
		return fmt.Sprintf("%s: statement %q on %s failed with MySQL error %d (%s): %v", e.Workload, e.Statement, e.Endpoint, e.Code, txt, e.Err)
	}
	if e.Code != 0 {
		return fmt.Sprintf("%s: statement %q on %s failed with MySQL error %d: %v", e.Workload, e.Statement, e.Endpoint, e.Code, e.Err)
	}
	return fmt.Sprintf("%s: statement %q on %s failed: %v", e.Workload, e.Statement, e.Endpoint, e.Err)
}

// Unwrap returns the driver error (a *mysql.MySQLError for server errors).
func (e *StatementError) Unwrap() error { return e.Err }

// errQueueFull is sysbench's fatal error when --rate outruns the workers.
var errQueueFull = errors.New("the event queue is full: the worker threads are unable to keep up with the specified event generation rate (--rate)")

// errAborted marks an event abandoned because the run is stopping.
var errAborted = errors.New("event aborted: run stopping")

// mysqlCode returns the server error code of err, if any.
func mysqlCode(err error) (uint16, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, true
	}
	return 0, false
}

// MySQL/MariaDB server error codes that mean the session is gone.
var connGoneCodes = map[uint16]bool{
	1053: true, // ER_SERVER_SHUTDOWN
	1152: true, // ER_ABORTING_CONNECTION
	1927: true, // ER_CONNECTION_KILLED (MariaDB)
	2006: true, // CR_SERVER_GONE_ERROR
	2013: true, // CR_SERVER_LOST
	2055: true, // CR_SERVER_LOST_EXTENDED
	4031: true, // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
}

// Client error codes of libmysqlclient (errmsg.h), which sysbench reports for failures
// that carry no server error packet. habench gives the driver's errors the same codes.
const (
	// CRConnectionError (2002): cannot connect through the unix socket.
	CRConnectionError uint16 = 2002
	// CRConnHostError (2003): cannot connect over TCP (refused, unreachable, timed out).
	CRConnHostError uint16 = 2003
	// CRServerGone (2006): the connection was found closed before a statement was sent.
	CRServerGone uint16 = 2006
	// CRServerLost (2013): the connection was lost while a statement (or the handshake) ran.
	CRServerLost uint16 = 2013
)

// clientCodes are the client codes that mean the connection is gone or could not be made.
var clientCodes = map[uint16]string{
	CRConnectionError: "Can't connect to local MySQL server through socket",
	CRConnHostError:   "Can't connect to MySQL server",
	CRServerGone:      "MySQL server has gone away",
	CRServerLost:      "Lost connection to MySQL server during query",
}

// isClientCode reports whether code is one of the client connection codes (2002, 2003,
// 2006, 2013, 2055).
func isClientCode(code uint16) bool { return clientCodes[code] != "" || code == 2055 }

// ConnError is a failure to connect to an endpoint, with the client error code
// libmysqlclient (and so sysbench) reports for it: 2002 (unix socket), 2003 (TCP: refused,
// unreachable, timed out) or 2013 (the server closed the connection during the handshake).
// Server errors during connect (1040 too many connections, 1045 access denied, ...) stay
// *mysql.MySQLError.
type ConnError struct {
	// Endpoint is the label of the endpoint (see Endpoint.Label).
	Endpoint string
	// Code is the client error code.
	Code uint16
	// Msg is libmysqlclient's text for it, e.g. "Can't connect to MySQL server on
	// '127.0.0.1' (111)" (the number is the system errno).
	Msg string
	// Err is the driver's or the dialer's error.
	Err error
}

// Error is "error CODE: MSG", sysbench's second FATAL line.
func (e *ConnError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Msg) }

// Unwrap returns the dialer's or the driver's error.
func (e *ConnError) Unwrap() error { return e.Err }

// connectError turns a failed connect to ep into a *ConnError with the client code when it
// carries no server error; server errors and others are returned as they are.
func connectError(ep Endpoint, err error) error {
	if err == nil {
		return nil
	}
	var ce *ConnError
	if errors.As(err, &ce) {
		return err
	}
	if _, ok := mysqlCode(err); ok {
		return err
	}
	code, lost := errorCode(err)
	if !lost {
		return err
	}
	errno := 0
	var en syscall.Errno
	var ne net.Error
	switch {
	case errors.As(err, &en):
		errno = int(en)
	case errors.As(err, &ne) && ne.Timeout():
		errno = int(syscall.ETIMEDOUT)
	}
	var msg string
	switch code {
	case CRConnectionError:
		msg = fmt.Sprintf("Can't connect to local MySQL server through socket '%s' (%d)", ep.Socket, errno)
	case CRConnHostError:
		msg = fmt.Sprintf("Can't connect to MySQL server on '%s' (%d)", ep.Host, errno)
	default:
		code = CRServerLost
		msg = "Lost connection to MySQL server at 'reading initial communication packet', system error: " + strconv.Itoa(errno)
	}
	return &ConnError{Endpoint: ep.Label(), Code: code, Msg: msg, Err: err}
}

// errorCode classifies err: its MySQL error code (the server's, or the client code of a
// connection failure: 2002, 2003, 2006, 2013) and whether the connection is unusable, so
// that the worker must reconnect (sysbench's CR_SERVER_LOST family). 0 for an error that
// is neither (a driver or programming error).
func errorCode(err error) (code uint16, lost bool) {
	if err == nil {
		return 0, false
	}
	var ce *ConnError
	if errors.As(err, &ce) {
		return ce.Code, true
	}
	if code, ok := mysqlCode(err); ok {
		return code, connGoneCodes[code]
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		if oe.Net == "unix" {
			return CRConnectionError, true
		}
		return CRConnHostError, true
	}
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, syscall.EPIPE):
		// Found closed before anything was sent.
		return CRServerGone, true
	case errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, mysql.ErrPktSync),
		errors.Is(err, mysql.ErrPktSyncMul), errors.Is(err, mysql.ErrBusyBuffer),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED):
		return CRServerLost, true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return CRServerLost, true
	}
	return 0, false
}

// isConnLost reports whether err means the connection is unusable and the worker must
// reconnect.
func isConnLost(err error) bool {
	_, lost := errorCode(err)
	return lost
}

// sharedError is an error that several workers had: the first one's, and how many more.
type sharedError struct {
	err    error
	more   int    // other workers
	detail string // what they had, e.g. "error codes 1461 x199"; "" = the same
}

// Error is the first worker's error and "(and N more workers: DETAIL)".
func (e *sharedError) Error() string {
	if e.detail == "" {
		return fmt.Sprintf("%v (and %d more workers, the same)", e.err, e.more)
	}
	return fmt.Sprintf("%v (and %d more workers: %s)", e.err, e.more, e.detail)
}

// Unwrap returns the first worker's error.
func (e *sharedError) Unwrap() error { return e.err }

// groupErrors joins the workers' errors (nil entries are skipped) so that errors shared by
// many workers are one line with a count: one per endpoint and MySQL error code (per text
// for errors without a code), the first of each group standing for it. nil when errs holds
// no error.
func groupErrors(errs []error) error {
	type key struct {
		endpoint string
		code     uint16
		text     string
	}
	var order []key
	first := map[key]error{}
	count := map[key]int{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		k := key{code: codeOf(err)}
		var se *StatementError
		var ce *ConnError
		switch {
		case errors.As(err, &se):
			k.endpoint = se.Endpoint
		case errors.As(err, &ce):
			k.endpoint = ce.Endpoint
		}
		if k.code == 0 || k.endpoint == "" {
			k.text = err.Error()
		}
		if _, ok := first[k]; !ok {
			order = append(order, k)
			first[k] = err
		}
		count[k]++
	}
	var out []error
	for _, k := range order {
		if n := count[k]; n > 1 {
			detail := ""
			if k.code != 0 {
				detail = fmt.Sprintf("error %d on %s", k.code, k.endpoint)
			}
			out = append(out, &sharedError{err: first[k], more: n - 1, detail: detail})
		} else {
			out = append(out, first[k])
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}
