package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// TestSysbenchServerKilledAndPreflight: `habench sysbench ... run` against a plain server,
// as a user would: pre-flight refusals are one line before "Threads started!" (more
// threads than max_connections, an unreachable port), too small a max_prepared_stmt_count
// gives one NOTE and a run in text mode; a server killed with kill -9 mid-run ends the run
// like sysbench (exit 1, error 2013 or 2006) with a WARNING naming the endpoint.
func TestSysbenchServerKilledAndPreflight(t *testing.T) {
	t.Parallel()
	srv := testserver.StartMariaDB(t, "--max-connections=20", "--max-prepared-stmt-count=30")
	state := stateDir(t)
	addr := "127.0.0.1:" + strconv.Itoa(srv.Port)
	conn := func(port int) []string {
		return []string{"--mysql-host", "127.0.0.1", "--mysql-port", strconv.Itoa(port), "--mysql-user", "root", "--mysql-db", "errdb", "--tables", "1", "--table-size", "1000"}
	}
	sysbench := func(port int, cmd string, extra ...string) []string {
		return append(append([]string{"sysbench", "oltp_read_write", cmd}, conn(port)...), extra...)
	}
	if r := habench(t, state, sysbench(srv.Port, "prepare")...); r.code != 0 {
		t.Fatalf("prepare: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	oneLine := func(what string, r result, want *regexp.Regexp) {
		t.Helper()
		if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !want.MatchString(r.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line matching %s", what, r.code, r.stderr, want)
		}
		if strings.Contains(r.stdout, "Threads started!") {
			t.Errorf("%s: \"Threads started!\" printed before the refusal:\n%s", what, r.stdout)
		}
	}
	oneLine("--threads 25", habench(t, state, sysbench(srv.Port, "run", "--threads", "25", "--time", "1")...),
		regexp.MustCompile(`^habench: error: --threads 25: `+regexp.QuoteMeta(addr)+` has max_connections=20 with \d+ in use; the run needs 25\n$`))
	free := testserver.FreePort(t)
	oneLine("unreachable", habench(t, state, sysbench(free, "run", "--time", "1")...),
		regexp.MustCompile(`^habench: error: unable to connect to MySQL server on host '127\.0\.0\.1', port `+strconv.Itoa(free)+
			`, aborting\.\.\.: error 2003: Can't connect to MySQL server on '127\.0\.0\.1' \(111\)\n$`))

	r := habench(t, state, sysbench(srv.Port, "run", "--threads", "4", "--time", "1")...)
	note := strings.Index(r.stdout, "NOTE: --db-ps-mode auto: "+addr+" has max_prepared_stmt_count=30 with 0 in use; the run needs 36 (4 threads x 9 statements): using client-side statements")
	if r.code != 0 || note < 0 || note > strings.Index(r.stdout, "Threads started!") || !strings.Contains(r.stdout, "transactions:") {
		t.Errorf("prepared statements over max_prepared_stmt_count: exit %d, want 0 and the NOTE before \"Threads started!\":\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// kill -9 of the server once the 15 s run reported its first second (its pre-flight
	// and connections done, however long they took on a loaded machine: killed before
	// them, the run would end with 2003).
	cmd := exec.Command(habenchBin, sysbench(srv.Port, "run", "--threads", "4", "--time", "15", "--report-interval", "1")...)
	cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	var out, errOut syncBuffer // read while the run writes them
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "[ 1s ]"); {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) before its first report:\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("no first report in a minute:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
	}
	srv.Kill(t)
	killed := time.Now()
	err := <-exited
	took := time.Since(killed)
	t.Logf("killed run: %v %v after the kill\nstdout:\n%s\nstderr:\n%s", err, took, out.String(), errOut.String())
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 1 || !regexp.MustCompile(`^habench: error: oltp_read_write: statement ".*" on `+regexp.QuoteMeta(addr)+` failed with MySQL error 20(13|06) `).MatchString(errOut.String()) {
		t.Errorf("killed server: exit %d, stderr %q; want exit 1 and the lost connection's error (2013 or 2006)", code, errOut.String())
	}
	if took > 8*time.Second {
		t.Errorf("the run went on for %v after the server died", took)
	}
	if w := fmt.Sprintf("WARNING: %s could not commit from ", addr); !strings.Contains(out.String(), w) || strings.Index(out.String(), w) > strings.Index(out.String(), "SQL statistics:") {
		t.Errorf("stdout lacks %q before the summary", w)
	}
}
