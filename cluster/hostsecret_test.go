package cluster

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/host"
)

// argvRecorder is this machine (host.Local) that records every command line it is given.
type argvRecorder struct {
	host.Local
	argvs [][]string
}

func (r *argvRecorder) Run(ctx context.Context, argv ...string) ([]byte, error) {
	r.argvs = append(r.argvs, argv)
	return r.Local.Run(ctx, argv...)
}

func (r *argvRecorder) RunInput(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	r.argvs = append(r.argvs, argv)
	return r.Local.RunInput(ctx, stdin, argv...)
}

// TestHostFilesNotInArgv: the files habench writes on a host (the init file holds the
// admin password) travel on standard input: no command line carries their content, plain
// or base64, and the files arrive intact with mode 0600.
func TestHostFilesNotInArgv(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const secret = "pw-Zq7-secret-'%;$x"
	init := []byte("CREATE USER 'hb'@'%' IDENTIFIED BY '" + secret + "';\n")
	r := &argvRecorder{}
	dir := t.TempDir()
	if err := prepareHostDir(ctx, r, filepath.Join(dir, "n1"), nil, map[string][]byte{"init.sql": init, "my.cnf": []byte("[mysqld]\n")}); err != nil {
		t.Fatal(err)
	}
	if err := hostWriteFile(ctx, r, filepath.Join(dir, "w"), init, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "n1", "init.sql"), filepath.Join(dir, "w")} {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != string(init) {
			t.Errorf("%s: %q %v, want %q", p, b, err, init)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v, want 0600", p, fi.Mode().Perm(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "n1", "data")); err != nil {
		t.Errorf("empty datadir: %v", err)
	}
	if len(r.argvs) != 2 {
		t.Fatalf("%d commands, want 2", len(r.argvs))
	}
	for _, argv := range r.argvs {
		all := strings.Join(argv, " ")
		for _, bad := range []string{secret, base64.StdEncoding.EncodeToString(init)} {
			if strings.Contains(all, bad) {
				t.Errorf("command line carries the content %q: %q", bad, all)
			}
		}
	}
	// A host that cannot give standard input is refused, not given the content in argv.
	if err := hostWriteFile(ctx, noInput{}, filepath.Join(dir, "x"), init, 0o600); err == nil || !strings.Contains(err.Error(), "standard input") {
		t.Errorf("host without stdin: %v", err)
	}
}

// noInput is a host without RunInput whose Run fails the test if called.
type noInput struct{}

func (noInput) Name() string { return "noinput" }
func (noInput) Run(context.Context, ...string) ([]byte, error) {
	panic("Run called with a file's content")
}
func (noInput) ReadFile(context.Context, string) ([]byte, error) { return nil, os.ErrInvalid }
func (noInput) Close() error                                     { return nil }
