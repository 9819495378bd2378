// Package testserver starts throwaway MariaDB servers from the system install on
// 127.0.0.1 for package tests that need a real server but not a whole topology.
// Every server is killed and its directory removed by t.Cleanup, also when the test fails.
package testserver

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/internal/testmachine"

	"github.com/go-sql-driver/mysql"
)

// Server is a running MariaDB test server. User root, no password, TCP on Host:Port.
type Server struct {
	Host   string
	Port   int
	Socket string
	Dir    string
	cmd    *exec.Cmd
	args   []string
	netns  string // the network namespace it runs in ("" for this one)
}

// DSN returns a go-sql-driver DSN for database db (may be "") as root over TCP.
func (s *Server) DSN(db string) string {
	c := mysql.NewConfig()
	c.User = "root"
	c.Net = "tcp"
	c.Addr = net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	c.DBName = db
	c.InterpolateParams = true
	return c.FormatDSN()
}

// Open returns a *sql.DB as root, closed at cleanup.
func (s *Server) Open(t testing.TB, db string) *sql.DB {
	t.Helper()
	d, err := sql.Open("mysql", s.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Available reports why the system MariaDB cannot be used ("" when it can).
func Available() string {
	for _, b := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db"} {
		if _, err := os.Stat(b); err != nil {
			return b + " missing (apt-get install mariadb-server)"
		}
	}
	return ""
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (LoopbackPorts).
func FreePort(t testing.TB) int {
	t.Helper()
	return LoopbackPorts(t, 1)
}

var (
	portsMu   sync.Mutex
	portsNext int              // where the next search starts
	portsGone = map[int]bool{} // handed out by this process
)

// LoopbackPorts returns the first of n (at least 1) consecutive TCP ports on 127.0.0.1
// that were free a moment ago, between 24000 and 32767: above habench's default loopback
// base port (23306) and below Linux's ephemeral range (32768-60999), so that no client
// connection of another test takes one before the server binds it (a port from a closed
// :0 listener was taken so in CI). Ports are never handed out twice by one test binary;
// binaries of other packages start their search elsewhere (by process id). The test fails
// when no n free ports in a row are left.
func LoopbackPorts(t testing.TB, n int) int {
	t.Helper()
	n = max(n, 1)
	const lo, hi = 24000, 32768
	portsMu.Lock()
	defer portsMu.Unlock()
	if portsNext == 0 {
		portsNext = lo + (os.Getpid()*211)%(hi-lo)
	}
	for tried := 0; tried < hi-lo; tried += n {
		base := portsNext
		portsNext += n
		if portsNext+n > hi {
			portsNext = lo
		}
		if base+n > hi {
			continue
		}
		free := true
		for p := base; p < base+n && free; p++ {
			free = !portsGone[p] && portFree(p)
		}
		if free {
			for p := base; p < base+n; p++ {
				portsGone[p] = true
			}
			return base
		}
	}
	t.Fatalf("no %d free ports in a row on 127.0.0.1 between %d and %d", n, lo, hi-1)
	return 0
}

// portFree reports whether 127.0.0.1:port can be bound now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// StartMariaDB initialises a datadir and starts mariadbd with the given extra
// "--name=value" options, waits until it accepts connections (at most 60 s), and
// registers cleanup. It skips the test when MariaDB is not installed and fails it
// when the server does not come up.
func StartMariaDB(t testing.TB, extra ...string) *Server {
	t.Helper()
	return StartMariaDBAt(t, Listen{}, extra...)
}

// Listen is where StartMariaDBAt's server listens: inside network namespace Netns (""
// for this one), on Host (default 127.0.0.1) and Port (default a free loopback port).
type Listen struct {
	Netns string
	Host  string
	Port  int
}

// StartMariaDBAt is StartMariaDB listening at l. In a namespace the server is started
// with `ip netns exec`; readiness is checked over its unix socket (the file system is
// shared), and the DSN is for TCP on l.Host as root (which the server allows from any
// host: the tests' own throwaway servers, on addresses nothing outside reaches).
func StartMariaDBAt(t testing.TB, l Listen, extra ...string) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("real-server test skipped in -short mode")
	}
	prereq.Need(t, Available())
	testmachine.Share(t)
	dir, err := os.MkdirTemp("", "hbtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	// A temporary directory of its own: the bootstrap's temporary tables in a shared /tmp
	// were seen to vanish while other tests ran ("Unknown table 'mysql.tmp_user_sys'").
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	inst := exec.Command("/usr/bin/mariadb-install-db", "--no-defaults", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--user=root",
		"--skip-name-resolve", "--innodb-log-file-size=16M", "--tmpdir="+tmp)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	s := &Server{Host: l.Host, Port: l.Port, Socket: filepath.Join(dir, "mysqld.sock"), Dir: dir, netns: l.Netns}
	if s.Host == "" {
		s.Host = "127.0.0.1"
	}
	if s.Port == 0 {
		s.Port = FreePort(t)
	}
	args := []string{"--no-defaults", "--datadir=" + data, "--user=root",
		"--bind-address=" + s.Host, "--port=" + strconv.Itoa(s.Port), "--socket=" + s.Socket,
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--log-error=" + filepath.Join(dir, "error.log"),
		"--skip-name-resolve", "--innodb-log-file-size=16M", "--innodb-buffer-pool-size=64M",
		"--max-connections=500", "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--tmpdir=" + tmp}
	s.args = append(args, extra...)
	t.Cleanup(func() { s.Kill(t) })
	s.start(t)
	return s
}

// Kill kills the server with SIGKILL (kill -9) and waits for it to exit; a no-op when it
// is not running.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart starts a killed server again on the same port and datadir and waits until it
// accepts connections (at most 60 s: InnoDB recovers first).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		t.Fatalf("mariadbd on port %d is still running", s.Port)
	}
	s.start(t)
}

// start starts mariadbd with s.args and waits until it accepts connections.
func (s *Server) start(t testing.TB) {
	t.Helper()
	dir := s.Dir
	s.cmd = exec.Command("/usr/sbin/mariadbd", s.args...)
	if s.netns != "" {
		// ip netns exec execs mariadbd in place: the PID killed at cleanup is the server's.
		s.cmd = exec.Command("ip", append([]string{"netns", "exec", s.netns, "/usr/sbin/mariadbd"}, s.args...)...)
	}
	// A session of its own, as a service and habench's sandbox servers have: with the
	// kernel's autogroup scheduling (sched_autogroup_enabled, on in Debian) a session is
	// a scheduling group, and a server sharing the client's group competes with it
	// thread by thread instead of group against group (measured on 2 CPUs, 8 threads:
	// habench's oltp_point_select fell from 107k to 83k QPS, its ratio to sysbench from
	// about 1.3x to 0.95x).
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := s.DSN("")
	if s.netns != "" {
		c := mysql.NewConfig()
		c.User, c.Net, c.Addr = "root", "unix", s.Socket
		dsn = c.FormatDSN()
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for {
		if err := db.PingContext(ctx); err == nil {
			if s.netns != "" {
				Exec(t, db, "CREATE USER IF NOT EXISTS 'root'@'%'", "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION")
			}
			return
		}
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mariadbd on port %d did not accept connections in 60s:\n%s", s.Port, log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Exec runs statements on db and fails the test on the first error.
func Exec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// String returns "HOST:PORT".
func (s *Server) String() string { return fmt.Sprintf("%s:%d", s.Host, s.Port) }

// ComCounters returns the server's global statement counters (SHOW GLOBAL STATUS
// Com_*), keyed as the server names them ("Com_select"), for before/after deltas.
func ComCounters(t testing.TB, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TableChecksums is "sum1,sum2,..." of CHECKSUM TABLE of each of tables (DB.TABLE) on db,
// in order, or "error TABLE: ..." for the first that cannot be checksummed: a value that
// differs between two servers holding different rows.
func TableChecksums(ctx context.Context, db *sql.DB, tables ...string) string {
	var out []string
	for _, tb := range tables {
		var name string
		var sum *int64
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+tb).Scan(&name, &sum); err != nil || sum == nil {
			return fmt.Sprintf("error %s: %v", tb, err)
		}
		out = append(out, strconv.FormatInt(*sum, 10))
	}
	return strings.Join(out, ",")
}
