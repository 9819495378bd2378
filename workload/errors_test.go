package workload

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestErrorCodes: the driver's and the dialer's errors get libmysqlclient's client codes,
// server errors keep theirs, and only the connection-gone ones mean reconnect.
func TestErrorCodes(t *testing.T) {
	dial := func(network string) error {
		return &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	for _, c := range []struct {
		err  error
		code uint16
		lost bool
	}{
		{dial("tcp"), 2003, true},
		{dial("unix"), 2002, true},
		{driver.ErrBadConn, 2006, true},
		{mysql.ErrInvalidConn, 2013, true},
		{fmt.Errorf("read: %w", io.EOF), 2013, true},
		{&mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"}, 1047, false},
		{&mysql.MySQLError{Number: 1927, Message: "Connection was killed"}, 1927, true},
		{&StatementError{Code: 2013, Err: mysql.ErrInvalidConn}, 2013, true},
		{errors.New("sql: converting argument"), 0, false},
	} {
		if code, lost := errorCode(c.err); code != c.code || lost != c.lost {
			t.Errorf("errorCode(%v) = %d, %v; want %d, %v", c.err, code, lost, c.code, c.lost)
		}
	}
	ep := Endpoint{Name: "n1", Host: "10.0.0.1", Port: 3306}
	if got := connectError(ep, dial("tcp")).Error(); got != "error 2003: Can't connect to MySQL server on '10.0.0.1' (111)" {
		t.Errorf("TCP connect error %q", got)
	}
	sock := Endpoint{Socket: "/tmp/x.sock"}
	if got := connectError(sock, dial("unix")).Error(); got != "error 2002: Can't connect to local MySQL server through socket '/tmp/x.sock' (111)" {
		t.Errorf("socket connect error %q", got)
	}
	se := &StatementError{Workload: "w", Endpoint: "n1", Statement: "COMMIT", Code: 2013, Err: mysql.ErrInvalidConn}
	if !strings.Contains(se.Error(), "failed with MySQL error 2013 (Lost connection to MySQL server during query)") {
		t.Errorf("statement error %q", se)
	}
}

// TestGroupErrors: errors shared by many workers are one line with a count; different
// ones stay apart, and errors.As still finds the first of each.
func TestGroupErrors(t *testing.T) {
	var errs []error
	for i := range 200 {
		errs = append(errs, &StatementError{Workload: "w", Endpoint: "n1", Statement: fmt.Sprintf("PREPARE s%d", i%9), Code: 1461,
			Err: &mysql.MySQLError{Number: 1461, Message: "Can't create more than max_prepared_stmt_count statements"}})
	}
	errs = append(errs, nil, &StatementError{Workload: "w", Endpoint: "n2", Statement: "PREPARE s1", Code: 1045, Err: errors.New("denied")})
	err := groupErrors(errs)
	msg := err.Error()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "(and 199 more workers: error 1461 on n1)") || len(msg) > 400 {
		t.Errorf("grouped: %q", msg)
	}
	var se *StatementError
	if !errors.As(err, &se) || se.Code != 1461 {
		t.Errorf("errors.As: %v", se)
	}
	if groupErrors([]error{nil, nil}) != nil {
		t.Error("no errors grouped into one")
	}
}

// TestOutageTracker: windows from a failure to the next commit; shorter than MinOutage
// dropped; one still open at the end reported when the endpoint was lost.
func TestOutageTracker(t *testing.T) {
	zero := time.Now()
	at := func(s float64) time.Time { return zero.Add(time.Duration(s * float64(time.Second))) }
	tr := &outageTracker{label: "n1"}
	tr.committed(at(0.1)) // nothing open: no-op
	tr.failed(at(1), 1213)
	tr.committed(at(1.2)) // 0.2 s: a retried deadlock, no outage
	tr.failed(at(2), 2013)
	tr.failed(at(2.5), 2003)
	tr.failed(at(3), 2003)
	tr.committed(at(4.5))
	tr.failed(at(9.8), 2013)
	got := tr.outages(zero, at(10))
	if len(got) != 2 {
		t.Fatalf("outages %v, want 2", got)
	}
	if o := got[0]; o.Start != 2*time.Second || o.End != 4500*time.Millisecond || o.Open || o.Failures != 3 || o.Codes[2003] != 2 {
		t.Errorf("first %+v", o)
	}
	if o := got[1]; !o.Open || o.Start != 9800*time.Millisecond || o.End != 10*time.Second {
		t.Errorf("second %+v: want open from 9.8 s (lost: 2013)", o)
	}
	if s := got[0].String(); s != "n1 could not commit from 2.00 s to 4.50 s of the run (2.50 s; failed attempts: 2003 x2, 2013 x1)" {
		t.Errorf("String %q", s)
	}
	tr2 := &outageTracker{label: "n2"}
	tr2.failed(at(9.8), 1213) // an ignored deadlock in flight at the end: not an outage
	if got := tr2.outages(zero, at(10)); len(got) != 0 {
		t.Errorf("short open window without a connection failure reported: %v", got)
	}
	// A writer of a multi-primary hot spot whose every attempt lost certification up to the
	// end: reported, open, but the endpoint answered, so it is not lost; one refused
	// statement among the conflicts makes it lost.
	tr4 := &outageTracker{label: "n4"}
	tr4.failed(at(8.5), 3101)
	tr4.failed(at(9), 1213)
	tr4.failed(at(9.5), 1180)
	got = tr4.outages(zero, at(10))
	if len(got) != 1 || !got[0].Open || !got[0].Conflicts() || openOutages(got) != nil ||
		!strings.Contains(got[0].String(), "to its end at 10.00 s, every attempt lost a conflict (1.50 s; failed attempts: 1180 x1, 1213 x1, 3101 x1)") {
		t.Errorf("conflicts only: %v, lost %v", got, openOutages(got))
	}
	tr4.failed(at(9.9), 1290)
	if got = tr4.outages(zero, at(10)); len(got) != 1 || got[0].Conflicts() || openOutages(got) == nil || !strings.Contains(got[0].String(), "still down") {
		t.Errorf("conflicts and a read-only refusal: %v, want lost", got)
	}
	tr3 := &outageTracker{label: "n3"}
	tr3.stalled(at(1), func() bool { return true }) // a commit raced: no window
	tr3.stalled(at(2), func() bool { return false })
	tr3.committed(at(3.5))
	if got := tr3.outages(zero, at(10)); len(got) != 1 || got[0].Failures != 0 || got[0].Start != 2*time.Second ||
		!strings.Contains(got[0].String(), "no failed attempt") {
		t.Errorf("stall: %v", got)
	}
}
