package knob

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// db returns the node's admin pool (opened on first use).
func (a *Applied) db(n *cluster.Node) (*sql.DB, error) {
	if db, ok := a.dbs[n.Name]; ok {
		return db, nil
	}
	db, err := a.c.OpenAdmin(n)
	if err != nil {
		return nil, err
	}
	a.dbs[n.Name] = db
	return db, nil
}

// dropDB closes node n's pool before a restart (its connections die with the server).
func (a *Applied) dropDB(n *cluster.Node) {
	if db, ok := a.dbs[n.Name]; ok {
		db.Close()
		delete(a.dbs, n.Name)
	}
}

func (a *Applied) closeDBs() {
	for k, db := range a.dbs {
		db.Close()
		delete(a.dbs, k)
	}
}

// read returns the target's current value on the server behind db (and, for provider
// options, the whole wsrep_provider_options string).
func read(ctx context.Context, db *sql.DB, t Target) (string, string, error) {
	if !varRE.MatchString(t.Variable) {
		return "", "", fmt.Errorf("%q is not a variable name", t.Variable)
	}
	var v sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+t.Variable).Scan(&v); err != nil {
		return "", "", err
	}
	switch t.Method {
	case MethodProvider:
		if strings.TrimSpace(v.String) == "" {
			return "", "", errNoProvider
		}
		val, ok := topology.ProviderOptionValue(v.String, t.Key)
		if !ok {
			return "", v.String, errNoProviderKey
		}
		return val, v.String, nil
	case MethodGroupMode:
		if Same("ON", v.String) {
			return "single-primary", "", nil
		}
		return "multi-primary", "", nil
	}
	if !v.Valid {
		return "NULL", "", nil
	}
	return v.String, "", nil
}

var (
	errNoProvider    = errors.New("no Galera provider loaded (wsrep_provider_options is empty)")
	errNoProviderKey = errors.New("the Galera provider has no such option")
)

// set applies value on e's node (and marks e changed).
func (a *Applied) set(ctx context.Context, e *entry, value string) error {
	db, err := a.db(e.node)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	switch e.t.Method {
	case MethodGroupMode:
		if e.first {
			cur, _, err := read(sctx, db, e.t)
			if err != nil {
				return err
			}
			if cur != strings.ToLower(value) {
				primary := ""
				if value == e.Before {
					primary = e.primary // setting it back: the primary it had
				}
				if err := SwitchGroupMode(sctx, a.c, strings.ToLower(value), primary); err != nil {
					return err
				}
			}
		}
	case MethodProvider:
		q := "SET GLOBAL wsrep_provider_options = " + SQLLiteral(e.t.Key+"="+value)
		if _, err := db.ExecContext(sctx, q); err != nil {
			return err
		}
	case MethodApplierRestart:
		caps := a.c.Capabilities()
		st, err := cluster.ReplicaStatus(sctx, db, caps)
		if err != nil {
			return err
		}
		if st == nil {
			_, err := db.ExecContext(sctx, "SET GLOBAL "+e.t.Variable+" = "+SQLLiteral(value))
			return a.mark(e, err)
		}
		conn, err := db.Conn(sctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(sctx, caps.StopReplica("SQL_THREAD")); err != nil {
			return err
		}
		_, serr := conn.ExecContext(sctx, "SET GLOBAL "+e.t.Variable+" = "+SQLLiteral(value))
		if _, err := conn.ExecContext(sctx, caps.StartReplicaThread("SQL_THREAD")); err != nil {
			return errors.Join(serr, err)
		}
		if err := waitApplier(sctx, db, caps); err != nil {
			return errors.Join(serr, err)
		}
		e.Note = "replica SQL (applier) thread stopped and started again around the change"
		return a.mark(e, serr)
	default:
		if _, err := db.ExecContext(sctx, "SET GLOBAL "+e.t.Variable+" = "+SQLLiteral(value)); err != nil {
			return err
		}
		if e.t.WaitResize {
			if err := waitResize(sctx, db); err != nil {
				e.changed = true
				return err
			}
		}
	}
	e.changed = true
	return nil
}

func (a *Applied) mark(e *entry, err error) error {
	if err == nil {
		e.changed = true
	}
	return err
}

// waitApplier waits until the replica's SQL thread runs again.
func waitApplier(ctx context.Context, db *sql.DB, caps topology.Capabilities) error {
	var last string
	for {
		st, err := cluster.ReplicaStatus(ctx, db, caps)
		if err == nil && st != nil {
			last = st[caps.ReplicaStatusColumn("sql_running")]
			if last == "Yes" {
				return nil
			}
			if e := st[caps.ReplicaStatusColumn("last_sql_error")]; e != "" {
				return fmt.Errorf("replica SQL thread did not start again: %s", e)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica SQL thread not running after the change (%q)", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitResize waits until InnoDB reports no buffer pool resize in progress:
// Innodb_buffer_pool_resize_status_code 0 (MySQL >= 8.0.31; 7 is a failed resize), or an
// empty or "Completed ..." Innodb_buffer_pool_resize_status.
func waitResize(ctx context.Context, db *sql.DB) error {
	var last string
	for {
		rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb\\_buffer\\_pool\\_resize\\_status%'")
		if err == nil {
			st := map[string]string{}
			for rows.Next() {
				var k, v string
				if rows.Scan(&k, &v) == nil {
					st[strings.ToLower(k)] = v
				}
			}
			rows.Close()
			last = st["innodb_buffer_pool_resize_status"]
			code, hasCode := st["innodb_buffer_pool_resize_status_code"]
			switch {
			case hasCode && code == "0":
				return nil
			case hasCode && code == "7":
				return fmt.Errorf("buffer pool resize failed: %s", last)
			case !hasCode && (last == "" || strings.Contains(strings.ToLower(last), "complete")):
				return nil
			case !hasCode && strings.Contains(strings.ToLower(last), "fail"):
				return fmt.Errorf("buffer pool resize failed: %s", last)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("buffer pool resize still in progress: %q", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
