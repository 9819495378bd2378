package checker

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/history"
	"github.com/habench/habench/internal/testserver"
)

// followNode is a Node on database ck of s as a user without READ ONLY ADMIN, so that
// read_only=ON refuses its writes (1290) as super_read_only does on a group's secondary.
func followNode(t *testing.T, s *testserver.Server, name string) Node {
	t.Helper()
	testserver.Exec(t, s.Open(t, ""), "CREATE DATABASE ck", "CREATE USER ck@'%'", "GRANT ALL ON ck.* TO ck@'%'")
	cfg, err := mysql.ParseDSN(s.DSN("ck"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = "ck"
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return Node{Name: name, DB: db}
}

// followPair is two servers with the register table prepared on each (n1 on a, n2 on
// b), register options of the given time whose Follow names *writer (n1 at first).
type followPair struct {
	a      *testserver.Server
	n1, n2 Node
	ctx    context.Context
	o      RegisterOptions
	writer *atomic.Pointer[Node]
}

func newFollowPair(t *testing.T, d time.Duration) *followPair {
	t.Helper()
	a, b := testserver.StartMariaDB(t), testserver.StartMariaDB(t)
	f := &followPair{a: a, n1: followNode(t, a, "n1"), n2: followNode(t, b, "n2"), writer: &atomic.Pointer[Node]{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	f.ctx, f.o = ctx, RegisterOptions{Keys: 2, Threads: 2, Time: d}
	for _, n := range []Node{f.n1, f.n2} {
		if err := PrepareRegister(ctx, n.DB, f.o); err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
	}
	f.writer.Store(&f.n1)
	f.o.Follow = func(context.Context) (Node, error) { return *f.writer.Load(), nil }
	return f
}

// TestSessionsFollowWriter: register sessions on n1, which turns read-only mid-run while
// Follow still names it for 300 ms and then names n2, move to n2 and commit there; while
// Follow names the read-only n1 they pause between refusals instead of looping.
func TestSessionsFollowWriter(t *testing.T) {
	f := newFollowPair(t, 3*time.Second)
	a, n1, n2, ctx, o, writer := f.a, f.n1, f.n2, f.ctx, f.o, f.writer
	const demoteAt, moveAt = time.Second, 1300 * time.Millisecond
	var window time.Duration // read-only until Follow names n2, as it happened (sleeps overshoot on a loaded machine)
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		time.Sleep(demoteAt)
		testserver.Exec(t, a.Open(t, ""), "SET GLOBAL read_only = ON")
		demoted := time.Now()
		time.Sleep(moveAt - demoteAt)
		writer.Store(&n2)
		window = time.Since(demoted)
	}()
	h, err := RunRegister(ctx, []Node{n1}, o)
	<-moved
	if err != nil {
		t.Fatal(err)
	}
	var okN1, okN2, refused int
	for _, op := range h.Ops() {
		switch {
		case op.Outcome == history.OK && op.Node == "n1":
			okN1++
		case op.Outcome == history.OK && op.Node == "n2":
			okN2++
		case op.Node == "n1" && strings.Contains(op.Error, "1290"):
			refused++
		}
	}
	t.Logf("%d ops: committed %d on n1, %d on n2; %d refused as read-only on n1", len(h.Ops()), okN1, okN2, refused)
	if okN1 == 0 || okN2 == 0 {
		t.Errorf("committed %d on n1 and %d on n2: want the sessions on n1 before it turned read-only and on n2 after", okN1, okN2)
	}
	if refused == 0 {
		t.Error("no refusal on n1 recorded: the demotion was not seen")
	}
	// About 300 ms of refusals with a 100 ms pause between them: a few per session, not a
	// loop (one per 100 ms of the window, and three more, per session).
	if max := o.Threads * (int(window/(100*time.Millisecond)) + 3); refused > max {
		t.Errorf("%d refusals on the read-only n1 in %v, want at most %d (a pause between them)", refused, window, max)
	}
}

// TestSessionsAbandonHungTransaction: the sessions' transactions on n1 hang on row locks
// another client holds while Follow names n2: within writerHang (plus a check) each is
// given up (its error says for which writer) and the sessions commit on n2; without the
// watch they would wait out the 50 s lock wait.
func TestSessionsAbandonHungTransaction(t *testing.T) {
	f := newFollowPair(t, 6*time.Second)
	a, n1, n2, ctx, o, writer := f.a, f.n1, f.n2, f.ctx, f.o, f.writer
	locker, err := a.Open(t, "ck").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	start := time.Now()
	var lockedAt time.Duration
	go func() {
		time.Sleep(time.Second)
		// Every register locked: the sessions' UPDATEs wait (innodb_lock_wait_timeout 50 s).
		if _, err := locker.ExecContext(ctx, "BEGIN"); err != nil {
			t.Error(err)
			return
		}
		if _, err := locker.ExecContext(ctx, "SELECT * FROM habench_register FOR UPDATE"); err != nil {
			t.Error(err)
			return
		}
		lockedAt = time.Since(start)
		writer.Store(&n2)
	}()
	h, err := RunRegister(ctx, []Node{n1}, o)
	if err != nil {
		t.Fatal(err)
	}
	var abandoned, okN2 int
	firstN2 := time.Duration(-1)
	for _, op := range h.Ops() {
		if op.Node == "n1" && strings.HasPrefix(op.Error, "abandoned: the writer moved to n2") {
			abandoned++
		}
		if op.Node == "n2" && op.Outcome == history.OK {
			if okN2++; firstN2 < 0 || time.Duration(op.End) < firstN2 {
				firstN2 = time.Duration(op.End)
			}
		}
	}
	t.Logf("locked at %v; %d transactions abandoned on n1; %d committed on n2, the first at %v", lockedAt, abandoned, okN2, firstN2)
	if abandoned == 0 || abandoned > o.Threads {
		t.Errorf("%d transactions abandoned on n1, want 1..%d (the ones hung on the locks)", abandoned, o.Threads)
	}
	if okN2 == 0 {
		t.Fatal("no commit on n2: the sessions did not move")
	}
	if limit := lockedAt + writerHang + 2*time.Second; firstN2 > limit {
		t.Errorf("first commit on n2 at %v, want by %v (within writerHang of the hang)", firstN2, limit)
	}
}

// TestSessionsGiveUpAtEnd: transactions hung on row locks when the run ends are given up
// endGrace after it (their error says so), not held for their 30 s timeout.
func TestSessionsGiveUpAtEnd(t *testing.T) {
	t.Parallel()
	a := testserver.StartMariaDB(t)
	n1 := followNode(t, a, "n1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := RegisterOptions{Keys: 2, Threads: 2, Time: 2 * time.Second}
	if err := PrepareRegister(ctx, n1.DB, o); err != nil {
		t.Fatal(err)
	}
	locker, err := a.Open(t, "ck").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	testserver.Exec(t, a.Open(t, ""), "SET GLOBAL innodb_lock_wait_timeout = 100")
	// The rows locked before the run, not 1 s into it: on a loaded machine (CI-like run
	// BASE) a lock taken by a timer came after the 2 s run and nothing hung. The sessions'
	// writes hang from the start; their plain reads do not wait.
	for _, q := range []string{"BEGIN", "SELECT * FROM habench_register FOR UPDATE"} {
		if _, err := locker.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	start := time.Now()
	h, err := RunRegister(ctx, []Node{n1}, o)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	gaveUp := 0
	for _, op := range h.Ops() {
		if strings.HasPrefix(op.Error, "abandoned: in flight at the end of the run") {
			gaveUp++
		}
	}
	t.Logf("run of %v took %v; %d transactions given up at the end", o.Time, took, gaveUp)
	if gaveUp != o.Threads {
		t.Errorf("%d transactions given up at the end, want %d (each session's, hung on the locks)", gaveUp, o.Threads)
	}
	if limit := o.Time + endGrace + 2*time.Second; took > limit {
		t.Errorf("the run took %v, want at most %v (its time and endGrace)", took, limit)
	}
}
