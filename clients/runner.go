package clients

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// Proc is one client process (`habench client-run`) as a Runner started it: its standard
// input (the job, then kept open while the coordinator wants the run) and output (its
// stream).
type Proc struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	// Wait waits for the process (or its connection) to end, after its Stdout reached its
	// end, and returns its error (with the last lines it wrote on its standard error).
	Wait func() error
	// Kill ends it at once (and its connection).
	Kill func()
}

// Runner starts `habench client-run` for a client (its name: a host to reach over SSH, or
// any name for a runner on this machine).
type Runner interface {
	Start(ctx context.Context, client string) (*Proc, error)
}

// LocalRunner runs each client as a process of this machine: Bin client-run (tests, and
// clients sharing the coordinator's machine).
type LocalRunner struct {
	// Bin is the habench binary.
	Bin string
}

// Start starts Bin client-run. ctx only bounds the start: the process ends when its
// standard input is closed, or by Kill.
func (r LocalRunner) Start(ctx context.Context, client string) (*Proc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(r.Bin, "client-run")
	stderr := &tailWriter{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("client %s: %w", client, err)
	}
	return &Proc{Stdin: stdin, Stdout: stdout, Kill: func() { _ = cmd.Process.Kill() },
		Wait: func() error {
			if err := cmd.Wait(); err != nil {
				return stderr.errorf("client %s: %s client-run: %v", client, r.Bin, err)
			}
			return nil
		}}, nil
}

// tailWriter keeps the last tailBytes bytes written to it (a process's standard error).
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2048

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
	}
	return len(b), nil
}

// errorf is the error format names, followed by the tail's last lines when there are any.
func (t *tailWriter) errorf(format string, a ...any) error {
	t.mu.Lock()
	s := strings.TrimSpace(string(t.buf))
	t.mu.Unlock()
	if s == "" {
		return fmt.Errorf(format, a...)
	}
	return fmt.Errorf(format+": %s", append(a, strings.ReplaceAll(s, "\n", " | "))...)
}
