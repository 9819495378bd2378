package workload

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
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
	// Code is the MySQL error code (0 when the error did not come from the server).
	Code uint16
	// Err is the underlying error.
	Err error
}

// Error names the workload, statement, endpoint and MySQL error code.
func (e *StatementError) Error() string {
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

// isConnLost reports whether err means the connection is unusable and the
// worker must reconnect (sysbench's CR_SERVER_LOST family).
func isConnLost(err error) bool {
	if err == nil {
		return false
	}
	if code, ok := mysqlCode(err); ok {
		return connGoneCodes[code]
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mysql.ErrPktSync) ||
		errors.Is(err, mysql.ErrPktSyncMul) || errors.Is(err, mysql.ErrBusyBuffer) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
