package experiment_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/workload"
)

// TestNoPasswordInResults: a run whose command line carries a password (as a flag and in
// a DSN) writes results in which the password appears nowhere, with no permission for
// others.
func TestNoPasswordInResults(t *testing.T) {
	t.Parallel()
	s := testserver.StartMariaDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wl, _ := workload.Lookup("oltp_point_select")
	tg := workload.Target{User: "root", DB: "sbtest", Endpoints: []workload.Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}}}
	o := smallOptions(1, time.Second)
	if err := wl.Prepare(ctx, tg, o, nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const secret = "Tr0ub4dor"
	b := &experiment.Bench{Workload: wl, Options: o, Target: tg, ResultsDir: dir,
		CommandLine: []string{"habench", "sysbench", "oltp_point_select", "run", "--mysql-password", secret, "--mysql-password=" + secret, "--dsn", "u:" + secret + "@tcp(127.0.0.1:1)/"}}
	out, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	filepath.Walk(out.Dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		n++
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), secret) {
			t.Errorf("%s holds the password", filepath.Base(p))
		}
		if fi.Mode().Perm()&0o004 != 0 {
			t.Errorf("%s is world-readable (%v)", filepath.Base(p), fi.Mode())
		}
		return nil
	})
	man, _ := os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
	if n < 4 || !strings.Contains(string(man), "--mysql-password=***") {
		t.Errorf("%d files; manifest command line not redacted as expected:\n%s", n, man)
	}
}
