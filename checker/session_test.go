package checker

import (
	"context"
	"database/sql"
	"net"
	"testing"
	"time"

	"github.com/habench/habench/history"
)

// readNodeTx is a read-only transaction of s on its read node rc.
func readNodeTx(t *testing.T, s *sessions, rc *readConn) *tx {
	t.Helper()
	tx := s.begin(nil)
	tx.rc = rc
	return tx
}

func openDB(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", "u:p@tcp("+addr+")/?timeout=30s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A read node that refuses connections costs one failed operation per redialAfter, not
// a loop of failed dials (review: the session redialled without a pause).
func TestReadNodeDownRedialsWithPause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: every dial is refused at once
	s := &sessions{h: history.New(), timeout: 2 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc := &readConn{s: s, ctx: ctx, node: Node{Name: "n2", DB: openDB(t, addr)}}
	const span = time.Second
	start, tries := time.Now(), 0
	for time.Since(start) < span {
		tx := readNodeTx(t, s, rc)
		if tx.onReadNode() {
			t.Fatalf("onReadNode succeeded against %s, where nothing listens", addr)
		}
		tx.cancel()
		if tx.op.Outcome != history.Fail || tx.op.Error == "" {
			t.Fatalf("outcome %v %q, want a failure with its error", tx.op.Outcome, tx.op.Error)
		}
		tries++
	}
	// One attempt per 50 ms at most: the pause is 100 ms (redialAfter), the bound leaves
	// room for a slow machine but not for a loop.
	if max := int(span/(50*time.Millisecond)) + 1; tries > max {
		t.Errorf("%d connection attempts to a refusing read node in %v, want at most %d (a pause of %v between them)", tries, span, max, redialAfter)
	}
	if tries < 2 {
		t.Errorf("%d attempts in %v: the session stopped trying", tries, span)
	}
}

// A read node that accepts but never answers (a partition's black hole, a hung server)
// holds the transaction no longer than its timeout, not until the run ends.
func TestReadNodeSilentBoundedByTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // accept, never send the handshake
		}
	}()
	const timeout = 300 * time.Millisecond
	s := &sessions{h: history.New(), timeout: timeout}
	rc := &readConn{s: s, ctx: context.Background(), node: Node{Name: "n3", DB: openDB(t, l.Addr().String())}}
	tx := readNodeTx(t, s, rc)
	defer tx.cancel()
	start := time.Now()
	if tx.onReadNode() {
		t.Fatal("onReadNode succeeded against a server that never answers")
	}
	if took := time.Since(start); took > timeout+2*time.Second {
		t.Errorf("the connection attempt took %v, want it bounded by the transaction timeout %v", took, timeout)
	}
	if tx.op.Outcome != history.Fail {
		t.Errorf("outcome %v, want fail", tx.op.Outcome)
	}
}
