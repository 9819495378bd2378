package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"syscall"
)

// fileReader is a shell kept open on an SSH host for ReadFile: one session on the master
// connection, to which each read writes one command line and from which it reads one
// line back, so a read costs a cat on the host instead of a new ssh client and session
// (about 1 ms instead of 50-150 ms: what a sampler reading /proc every second needs).
type fileReader struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	dead bool
}

// readRequest is the command line for path: the file (or cat's error) and a trailer with
// cat's exit status, base64 on one line (any content survives the line framing).
func readRequest(path string) string {
	return "{ cat -- " + Quote([]string{path}) + ` 2>&1; echo "<rc $?>"; } | base64 | tr -d '\n'; echo` + "\n"
}

// parseReadReply splits a decoded reply into the content and cat's exit status. Pure.
func parseReadReply(line []byte) ([]byte, int, error) {
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(line)))
	if err != nil {
		return nil, 0, fmt.Errorf("reply not base64: %w", err)
	}
	i := bytes.LastIndex(raw, []byte("<rc "))
	if i < 0 || !bytes.HasSuffix(raw, []byte(">\n")) {
		return nil, 0, errors.New("reply without its trailer")
	}
	rc, err := strconv.Atoi(string(raw[i+4 : len(raw)-2]))
	if err != nil {
		return nil, 0, fmt.Errorf("reply trailer %q: %w", raw[i:], err)
	}
	body := raw[:i]
	return body, rc, nil
}

// startReader opens the shell session (the master connection must exist).
func (s *SSH) startReader() (*fileReader, error) {
	cmd, in, out, err := s.startSession("exec sh")
	if err != nil {
		return nil, err
	}
	return &fileReader{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}, nil
}

// startSession starts remote command on s's host over the master connection as a
// long-lived session that reads its stdin (no -n) and is a process group of its own, and
// returns its stdin and stdout. Errors: the ssh arguments, the pipes, or ssh not starting.
func (s *SSH) startSession(command string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	a, err := s.args()
	if err != nil {
		return nil, nil, nil, err
	}
	var args []string
	for _, x := range a {
		if x != "-n" { // the session reads its stdin
			args = append(args, x)
		}
	}
	args = append(args, "-o", "ControlMaster=no", s.Dest, "--", command)
	cmd := exec.Command("ssh", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: ssh: %w", s.Name(), err)
	}
	return cmd, in, out, nil
}

func (r *fileReader) close() {
	if r == nil || r.dead {
		return
	}
	r.dead = true
	r.in.Close()
	r.cmd.Process.Kill()
	r.cmd.Wait()
}

// ReadFile implements Host: the file's content through a shell kept open on the host
// (see fileReader); a file that cannot be read is an *ExitError with cat's message. When
// the host's shell lacks base64 (or the session breaks) it falls back to one `cat` per
// read over Run. Reads of one SSH value are serialised.
func (s *SSH) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := s.Connect(ctx); err != nil {
		return nil, err
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.noReader {
		return s.Run(ctx, "cat", "--", path)
	}
	if s.reader == nil || s.reader.dead {
		r, err := s.startReader()
		if err != nil {
			return nil, err
		}
		s.reader = r
	}
	r := s.reader
	type reply struct {
		line []byte
		err  error
	}
	ch := make(chan reply, 1)
	go func() {
		if _, err := io.WriteString(r.in, readRequest(path)); err != nil {
			ch <- reply{err: err}
			return
		}
		line, err := r.out.ReadBytes('\n')
		ch <- reply{line, err}
	}()
	var rep reply
	select {
	case rep = <-ch:
	case <-ctx.Done():
		r.close() // the session's state is unknown now: a new one next time
		<-ch
		return nil, fmt.Errorf("%s: read %s: %w", s.Name(), path, ctx.Err())
	}
	if rep.err != nil {
		r.close()
		return s.Run(ctx, "cat", "--", path)
	}
	body, rc, err := parseReadReply(rep.line)
	if err != nil {
		// No base64 there, most likely: cat over Run from now on.
		r.close()
		s.noReader = true
		return s.Run(ctx, "cat", "--", path)
	}
	if rc != 0 {
		return nil, &ExitError{Host: s.Name(), Argv: []string{"cat", "--", path}, Code: rc, Stderr: string(body)}
	}
	return body, nil
}

// closeReader ends the ReadFile session, if any.
func (s *SSH) closeReader() {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.reader.close()
	s.reader = nil
}

// Session starts command on s's host as a long-lived session over the master connection
// (connecting first): it reads its standard input, which the caller writes to, and the
// caller reads its standard output; closing stdin ends a command that stops at EOF, and
// the command ends with the session if this process dies (its end of stdin closes).
// Wait on the returned command. Errors: the connection, the pipes, ssh not starting.
func (s *SSH) Session(ctx context.Context, command string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	if err := s.Connect(ctx); err != nil {
		return nil, nil, nil, err
	}
	return s.startSession(command)
}
