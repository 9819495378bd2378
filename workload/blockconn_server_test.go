//go:build linux

package workload

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// TestBlockConnRunFds runs workloads on blocking sockets over TCP and a unix
// socket, with a worker's session killed on the server and with a run
// cancelled while its statements are blocked: the process has as many file
// descriptors after each run as before. Not parallel: it counts the process's descriptors.
func TestBlockConnRunFds(t *testing.T) {
	s := testserver.StartMariaDB(t)
	admin := s.Open(t, "")
	defer admin.Close()
	admin.SetMaxOpenConns(2)
	admin.SetMaxIdleConns(0) // its conns close after each use: only the runs' count
	tcp := serverTarget(s, "sbtest")
	unix := tcp
	unix.Endpoints = []Endpoint{{Name: "n1", Socket: s.Socket}}
	rw := mustLookup(t, "oltp_read_write")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	o := runOpts(4, 1500*time.Millisecond)
	o.Tables, o.TableSize = 1, 1000
	if err := rw.Prepare(ctx, tcp, o, nil); err != nil {
		t.Fatal(err)
	}
	before := fdCountSettles(t, fdCount(t))
	check := func(what string) {
		t.Helper()
		if after := fdCountSettles(t, before); after != before {
			t.Errorf("%s: %d fds before, %d after", what, before, after)
		}
	}
	for _, tg := range []Target{tcp, unix} {
		for _, mode := range []string{PSAuto, PSDisable} {
			ro := o
			ro.PSMode = mode
			res, err := rw.Run(ctx, tg, ro, nil)
			if err != nil || res.Transactions == 0 {
				t.Fatalf("%s %s: %v (%+v)", tg.Endpoints[0].addr(), mode, err, res)
			}
			check(tg.Endpoints[0].addr() + " " + mode)
		}
	}

	// A worker's session killed on the server: with the lost-connection codes ignored
	// (a lost connection ends a run otherwise, as in sysbench) the worker reconnects.
	ko := o
	ko.IgnoreErrors = append(append([]uint16{}, DefaultIgnoreErrors...), 2013, 2006, 1927)
	go func() {
		time.Sleep(500 * time.Millisecond)
		var id int64
		if err := admin.QueryRowContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB='sbtest' AND ID <> CONNECTION_ID() ORDER BY ID LIMIT 1").Scan(&id); err == nil {
			admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		}
	}()
	res, err := rw.Run(ctx, tcp, ko, nil)
	if err != nil || res.Reconnects < 1 {
		t.Fatalf("run with a killed session: %v, %d reconnects", err, res.Reconnects)
	}
	check("killed session")

	// Cancelled while every write waits on a global read lock.
	lock, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, rcancel)
	start := time.Now()
	uo := runOpts(2, 10*time.Second)
	uo.Tables, uo.TableSize = 1, 1000
	_, err = mustLookup(t, "oltp_update_index").Run(rctx, tcp, uo, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("run cancelled while blocked: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel of blocked statements took %v", d)
	}
	lock.ExecContext(ctx, "UNLOCK TABLES")
	lock.Close()
	check("cancelled while blocked")
}
