package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

// TestKnobNamesAgainstServer: where the servers exist, knob names are checked against the
// server's own SHOW GLOBAL VARIABLES (a throwaway MariaDB on 127.0.0.1): a scenario on it,
// given by dsns: or as a registered cluster:, is refused by --dry-run and by the run (exit 2,
// one line naming the field, the name and the closest variable of the node) before any
// table is prepared, and `habench knob set` and `knob show` refuse the name with the same
// suggestion, changing nothing. A variable the server has passes.
func TestKnobNamesAgainstServer(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	srv := testserver.StartMariaDB(t)
	state := stateDir(t)
	dir := t.TempDir()
	name := testenv.Name(t, "inkn")
	dsn := fmt.Sprintf("root@tcp(127.0.0.1:%d)/", srv.Port)
	if r := habench(t, state, "register", "--name", name, "--dsn", dsn); r.code != 0 {
		t.Fatalf("register: exit %d\n%s", r.code, r.stderr)
	}
	write := func(file, topo, axis string) string {
		p := filepath.Join(dir, file)
		body := "name: x\ntopologies: [" + topo + "]\nworkload: {test: oltp_read_write, options: {tables: 1, table-size: 100, time: 1}}\n" +
			"sweep:\n  " + axis + "\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	byDSN := write("dsn.yaml", fmt.Sprintf("{name: inkd, provider: existing, dsns: [%q]}", dsn), "knob.sync_binlg: [0, 1]")
	byName := write("name.yaml", fmt.Sprintf("{name: %s, provider: existing, cluster: %s}", name, name), "knob.max_conections: [100]")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", byDSN, "--dry-run"}, `line 5: sweep.knob.sync_binlg "sync_binlg": topology inkd: unknown server variable on node n1 (root@tcp(127.0.0.1:`},
		{[]string{"run", byDSN, "--results", dir}, `(did you mean sync_binlog?)`},
		{[]string{"run", byName, "--dry-run"}, `sweep.knob.max_conections "max_conections": topology ` + name + `: unknown server variable on cluster ` + name + ` node n1 (did you mean max_connections?)`},
		{[]string{"run", byName, "--results", dir}, `(did you mean max_connections?)`},
		{[]string{"knob", "set", name, "wsrep_slave_thread=2"}, `unknown system variable wsrep_slave_thread (ER 1193); nothing was changed (did you mean wsrep_slave_threads?)`},
		{[]string{"knob", "show", name, "max_conections"}, `NAME "max_conections": no node could read it (ER 1193) (did you mean max_connections?)`},
	} {
		r := habench(t, state, c.args...)
		msg := strings.TrimSpace(r.stderr)
		if r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("habench %v: exit %d, stderr %q; want exit 2, one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	var tables int
	srv.Open(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME LIKE 'sbtest%'").Scan(&tables)
	if tables != 0 {
		t.Errorf("a refused run prepared %d table(s)", tables)
	}
	// A variable the catalog does not list but the server has passes the check.
	ok := write("ok.yaml", fmt.Sprintf("{name: %s, provider: existing, cluster: %s}", name, name), "knob.max_connections: [100]")
	if r := habench(t, state, "run", ok, "--dry-run"); r.code != 0 {
		t.Errorf("dry run with max_connections: exit %d, %s", r.code, r.stderr)
	}
}

// TestDeployRefusesUnknownKnob: a topology file's knob names are checked against the
// installation's variable list before the deploy (no server started): exit 2, one line with
// the closest name and the other unknown names, no cluster left.
func TestDeployRefusesUnknownKnob(t *testing.T) {
	t.Parallel()
	prereq.Need(t, testserver.Available())
	state := stateDir(t)
	f := filepath.Join(t.TempDir(), "topo.yaml")
	body := "name: " + testenv.Name(t, "indk") + "\nkind: async\nnodes: 2\nflavor: mariadb\nknobs: {sync_binlg: 0, \"n2:wsrep_slave_thread\": 2, max_connections: 50}\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := habench(t, state, "deploy", "-f", f)
	msg := strings.TrimSpace(r.stderr)
	want := `knobs.wsrep_slave_thread "wsrep_slave_thread": unknown server variable on mariadb 10.11 (did you mean wsrep_slave_threads?); also unknown: sync_binlg`
	if r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Errorf("deploy: exit %d, stderr %q; want exit 2, one line with %q", r.code, r.stderr, want)
	}
	noClusters(t, state)
}
