package host

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"syscall"
)

// fileReader is a shell kept open on an SSH host for ReadFile: one session on the master
// connection, to which each read writes one command line and from which it reads the
// reply, so a read costs one cat on the host instead of a new ssh client and session
// (about 1 ms instead of 50-150 ms: what a sampler reading /proc every second needs).
type fileReader struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	dead bool
	seq  uint64
}

// readRequest is the command line for path: the file (or cat's error) as it is, then a
// trailer "<rc STATUS:nonce>" and a newline, the nonce unique to the request so that no
// content is taken for the trailer. One process on the host (cat) per read.
func readRequest(path, nonce string) string {
	return "cat -- " + Quote([]string{path}) + ` 2>&1; echo "<rc $?:` + nonce + `>"` + "\n"
}

// readNonce returns a nonce for a reader's next request: 64 random bits and a sequence
// number, in hex.
func (r *fileReader) readNonce() string {
	r.seq++
	return fmt.Sprintf("%016x%x", rand.Uint64(), r.seq)
}

// readReply reads one reply to a request with nonce from out: the bytes up to and
// including the line that ends with its trailer.
func readReply(out *bufio.Reader, nonce string) ([]byte, error) {
	end := []byte(":" + nonce + ">\n")
	var reply []byte
	for {
		chunk, err := out.ReadBytes('\n')
		reply = append(reply, chunk...)
		if err != nil {
			return reply, err
		}
		if bytes.HasSuffix(reply, end) {
			return reply, nil
		}
	}
}

// parseReadReply splits a reply to a request with nonce into the content and cat's exit
// status. Pure.
func parseReadReply(raw []byte, nonce string) ([]byte, int, error) {
	end := ":" + nonce + ">\n"
	i := bytes.LastIndex(raw, []byte("<rc "))
	if i < 0 || !bytes.HasSuffix(raw, []byte(end)) {
		return nil, 0, errors.New("reply without its trailer")
	}
	rc, err := strconv.Atoi(string(raw[i+4 : len(raw)-len(end)]))
	if err != nil {
		return nil, 0, fmt.Errorf("reply trailer %q: %w", raw[i:], err)
	}
	return raw[:i], rc, nil
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
// the session breaks it falls back to one `cat` over Run for that read, and for good when
// a reply is not what the request asked for. Reads of one SSH value are serialised.
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
	nonce := r.readNonce()
	go func() {
		if _, err := io.WriteString(r.in, readRequest(path, nonce)); err != nil {
			ch <- reply{err: err}
			return
		}
		raw, err := readReply(r.out, nonce)
		ch <- reply{raw, err}
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
	body, rc, err := parseReadReply(rep.line, nonce)
	if err != nil {
		// A shell that does not run the request as sh does: cat over Run from now on.
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
