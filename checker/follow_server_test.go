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

// TestSessionsFollowWriter: register sessions on n1, which turns read-only mid-run while
// Follow still names it for 300 ms and then names n2, move to n2 and commit there; while
// Follow names the read-only n1 they pause between refusals instead of looping.
func TestSessionsFollowWriter(t *testing.T) {
	a, b := testserver.StartMariaDB(t), testserver.StartMariaDB(t)
	n1, n2 := followNode(t, a, "n1"), followNode(t, b, "n2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := RegisterOptions{Keys: 2, Threads: 2, Time: 3 * time.Second}
	for _, n := range []Node{n1, n2} {
		if err := PrepareRegister(ctx, n.DB, o); err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
	}
	var writer atomic.Pointer[Node]
	writer.Store(&n1)
	o.Follow = func(context.Context) (Node, error) { return *writer.Load(), nil }
	const demoteAt, moveAt = time.Second, 1300 * time.Millisecond
	go func() {
		time.Sleep(demoteAt)
		testserver.Exec(t, a.Open(t, ""), "SET GLOBAL read_only = ON")
		time.Sleep(moveAt - demoteAt)
		writer.Store(&n2)
	}()
	h, err := RunRegister(ctx, []Node{n1}, o)
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
	// 300 ms of refusals with a 100 ms pause between them: a few per session, not a loop.
	if max := o.Threads * 6; refused > max {
		t.Errorf("%d refusals on the read-only n1 in %v, want at most %d (a pause between them)", refused, moveAt-demoteAt, max)
	}
}
