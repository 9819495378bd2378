// Package host runs commands and reads files on the machine a node runs on: this
// machine (optionally inside one of habench's network namespaces) or, for a user's own
// servers, a host reached over SSH. It knows nothing of databases: cluster, netem and
// sampler import it, never the reverse.
package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Host is one machine a node runs on.
type Host interface {
	// Name is how messages name the host, e.g. "local", "netns hb-c1-n1", "ssh root@db1:22".
	Name() string
	// Run runs argv (no shell on this side; an SSH host quotes argv for the remote shell)
	// and returns its standard output. A command that ran and exited non-zero returns an
	// *ExitError carrying the exit code and standard error; failing to reach the host or to
	// start the command returns another error.
	Run(ctx context.Context, argv ...string) ([]byte, error)
	// ReadFile returns the contents of path on the host (e.g. /proc/stat).
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Close releases the host's connection, if any. Run after Close fails.
	Close() error
}

// InputRunner is a Host that can give a command standard input: Local and SSH are.
type InputRunner interface {
	// RunInput is Run with stdin as the command's standard input. Use it for content
	// that must not appear on a command line (/proc/PID/cmdline is world-readable):
	// passwords, files that hold them.
	RunInput(ctx context.Context, stdin []byte, argv ...string) ([]byte, error)
}

// RunInput runs argv on h with stdin as its standard input (InputRunner). A host that
// cannot give a command standard input is an error naming it; the content is never put
// on the command line instead.
func RunInput(ctx context.Context, h Host, stdin []byte, argv ...string) ([]byte, error) {
	r, ok := h.(InputRunner)
	if !ok {
		return nil, fmt.Errorf("%s: cannot give a command standard input", h.Name())
	}
	return r.RunInput(ctx, stdin, argv...)
}

// ExitError is a command that ran on a host and exited non-zero.
type ExitError struct {
	Host   string
	Argv   []string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" {
		msg = "no message"
	}
	return fmt.Sprintf("%s: %s: exit status %d: %s", e.Host, shortArgv(e.Argv), e.Code, msg)
}

// shortArgv renders argv for a one-line message: an argument that is a script (several
// lines) or longer than 60 bytes is cut to its first 40 bytes and "...".
func shortArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if j := strings.IndexByte(a, '\n'); j >= 0 || len(a) > 60 {
			if j < 0 || j > 40 {
				j = min(40, len(a))
			}
			a = a[:j] + "..."
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// Local is this machine. Netns, when set, names a network namespace (under
// /run/netns) that commands run in, through `ip netns exec`; files are read from this
// process's view of the file system, so a namespace's /proc/net/* is read as
// /proc/PID/net/* of a process inside it.
type Local struct {
	Netns string
}

// Name implements Host.
func (l Local) Name() string {
	if l.Netns != "" {
		return "netns " + l.Netns
	}
	return "local"
}

// Run implements Host.
func (l Local) Run(ctx context.Context, argv ...string) ([]byte, error) {
	return l.run(ctx, nil, argv)
}

// RunInput implements InputRunner.
func (l Local) RunInput(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	if stdin == nil {
		stdin = []byte{}
	}
	return l.run(ctx, stdin, argv)
}

// run is Run, with stdin as the command's standard input when it is not nil.
func (l Local) run(ctx context.Context, stdin []byte, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("host: empty command")
	}
	full := argv
	if l.Netns != "" {
		full = append([]string{"ip", "netns", "exec", l.Netns}, argv...)
	}
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return stdout.Bytes(), &ExitError{Host: l.Name(), Argv: argv, Code: ee.ExitCode(), Stderr: stderr.String()}
	}
	if err != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %s: %w", l.Name(), argv[0], err)
	}
	return stdout.Bytes(), nil
}

// ReadFile implements Host.
func (l Local) ReadFile(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(path)
}

// Close implements Host.
func (Local) Close() error { return nil }
