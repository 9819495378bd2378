package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SSH is a host reached with the OpenSSH client (`ssh`, Debian's openssh-client).
//
// Why the ssh binary and not an SSH library: DBAs reach their servers with an ssh
// configuration that already works (agent, ProxyJump, ~/.ssh/config, known_hosts,
// certificates, hardware keys); the OpenSSH client honours all of it exactly, is audited
// and maintained, and its ControlMaster multiplexing gives one TCP connection and one
// authentication per host for the whole run. A library would reimplement that, and differ.
//
// The first Run (or Connect) starts a master connection, `ssh -M -N -f -o
// ControlPersist=60s ... Dest`, which authenticates and goes to the background; every
// command then runs as `ssh -T -n -o BatchMode=yes -o ControlMaster=no -o
// ControlPath=DIR/%C [-F Config] [-l User] [-p Port] [-i Identity] [-o OPTION]... Dest --
// 'quoted argv'` over it: no prompts (a refused key fails at once), one connection per
// destination shared by every SSH value of this process (DIR is this process's control
// directory, or ControlDirEnv's, shared with other processes; CloseAll ends the masters of
// the first). Should the master die, commands connect on their
// own. A master left by a killed process exits 60 s after its last use. Run is safe for
// concurrent use; the host's sshd bounds the commands running at once over one connection
// (MaxSessions, 10 by default).
type SSH struct {
	// Dest is the destination as ssh takes it: an address, a host name or a Host alias of
	// the ssh configuration.
	Dest string
	// User, Port (0: ssh's default) and Identity (a private key file; "" for the agent and
	// the configuration's keys) override the ssh configuration when set.
	User     string
	Port     int
	Identity string
	// Config is an ssh_config(5) file given to ssh -F; "" uses the user's own
	// (~/.ssh/config, /etc/ssh/ssh_config).
	Config string
	// Options are extra "-o Key=Value" options, e.g. "StrictHostKeyChecking=accept-new".
	Options []string
	// ConnectTimeout bounds connecting and authenticating (default 10 s).
	ConnectTimeout time.Duration
	// Check, when set, vets the destination as the ssh configuration resolves it (ssh -G,
	// no connection) before the first connection; its error refuses the connection.
	Check func(Resolved) error

	mu     sync.Mutex
	master bool // a master connection was started for this value

	rmu      sync.Mutex
	reader   *fileReader // ReadFile's shell session
	noReader bool        // the host cannot run it: ReadFile uses Run
}

// Name implements Host: "ssh USER@DEST:PORT" with what is set ("ssh db1" when only Dest).
func (s *SSH) Name() string {
	d := s.Dest
	if s.User != "" {
		d = s.User + "@" + d
	}
	if s.Port != 0 {
		d += ":" + strconv.Itoa(s.Port)
	}
	return "ssh " + d
}

var control struct {
	sync.Mutex
	dir    string
	shared bool   // dir is ControlDirEnv's: its masters outlive the process
	users  []*SSH // one per master started, for CloseAll
}

// ControlDirEnv names a directory for the master connections of every habench process
// that has it set, instead of one directory per process: a master one process starts
// serves the next (`habench deploy`, then `run`, `status`, `fault` ...), which then
// neither connects nor authenticates again, and it exits by itself 60 s after its last
// use (ControlPersist). Only processes that connect alike share a master (the same
// Config, User, Port, Identity and Options: a subdirectory each), so a refused key is
// still refused. CloseAll leaves such masters up and the directory in place; Close and
// CloseMatching still end theirs. The path must leave room for ssh's socket names: 57
// bytes at most.
const ControlDirEnv = "HABENCH_SSH_CONTROL_DIR"

// maxControlDir is the longest ControlDirEnv directory: a unix socket path has at most
// 107 bytes, and "/" settingsKey "/" %C adds 50.
const maxControlDir = 57

// controlDir returns this process's ControlPath directory (mode 0700, created on first
// use, and again when it was removed from under the process: a /tmp cleaner during a long
// run, or a test lab's cleanup ending the masters; commands then start new masters).
func controlDir() (string, error) {
	control.Lock()
	defer control.Unlock()
	if d := os.Getenv(ControlDirEnv); d != "" {
		if len(d) > maxControlDir {
			return "", fmt.Errorf("%s %q: %d bytes, too long for ssh's control sockets (%d at most)", ControlDirEnv, d, len(d), maxControlDir)
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("%s: %w", ControlDirEnv, err)
		}
		control.dir, control.shared = d, true
		return d, nil
	}
	if control.shared {
		control.dir, control.shared = "", false // ControlDirEnv was unset since
	}
	if control.dir != "" {
		if _, err := os.Stat(control.dir); err == nil {
			return control.dir, nil
		}
	}
	// Short: a unix socket path has at most 107 bytes, and %C is 40.
	d, err := os.MkdirTemp("", "hbssh-")
	if err != nil {
		return "", fmt.Errorf("ssh control directory: %w", err)
	}
	control.dir = d
	return d, nil
}

// args returns ssh's arguments before the remote command.
func (s *SSH) args() ([]string, error) {
	dir, err := controlDir()
	if err != nil {
		return nil, err
	}
	return s.argsIn(dir)
}

// argsIn is args with control directory dir.
func (s *SSH) argsIn(dir string) ([]string, error) {
	if s.Dest == "" || strings.HasPrefix(s.Dest, "-") {
		return nil, fmt.Errorf("ssh destination %q: want a host name, an address or an ssh_config Host", s.Dest)
	}
	to := s.ConnectTimeout
	if to <= 0 {
		to = 10 * time.Second
	}
	if d, shared := controlState(); shared && d == dir {
		// Shared only between processes that connect alike: a master authenticated with
		// one key must not carry another process's commands meant for another key.
		dir = filepath.Join(dir, s.settingsKey())
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("%s: %w", ControlDirEnv, err)
		}
	}
	a := []string{"-T", "-n", "-o", "BatchMode=yes", "-o", "ControlPath=" + filepath.Join(dir, "%C"),
		"-o", fmt.Sprintf("ConnectTimeout=%d", int((to+time.Second-1)/time.Second)),
		"-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"}
	return append(a, s.UserArgs()...), nil
}

// settingsKey is 8 hexadecimal digits of a hash of how s connects (Config, User, Port,
// Identity, Options): the subdirectory of ControlDirEnv's directory for its masters.
func (s *SSH) settingsKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s", s.Config, s.User, s.Port, s.Identity)
	for _, o := range s.Options {
		fmt.Fprintf(h, "\x00%s", o)
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// UserArgs returns the ssh options of s that say where and as whom to connect, as a user
// would type them: -F Config, -l User, -p Port, -i Identity and -o OPTION per Options, in
// that order, each only when set (nil when none). habench's own options (control path,
// batch mode, timeouts) are not among them. A command a user is told to run by hand
// reaches the host as habench does with `ssh UserArgs... Dest`.
func (s *SSH) UserArgs() []string {
	var a []string
	if s.Config != "" {
		a = append(a, "-F", s.Config)
	}
	if s.User != "" {
		a = append(a, "-l", s.User)
	}
	if s.Port != 0 {
		a = append(a, "-p", strconv.Itoa(s.Port))
	}
	if s.Identity != "" {
		a = append(a, "-i", s.Identity)
	}
	for _, o := range s.Options {
		a = append(a, "-o", o)
	}
	return a
}

// ConnError is a failure to reach or log in to an SSH host (ssh exited 255 before the
// remote command ran): unreachable, refused key, unknown host key. Msg is ssh's message.
type ConnError struct {
	Host string
	Msg  string
}

func (e *ConnError) Error() string { return e.Host + ": cannot connect: " + e.Msg }

// Run implements Host. argv is quoted for the remote POSIX shell (Quote), so spaces,
// quotes, $ and ; in arguments reach the command as they are. ssh's own exit status 255
// (no connection, refused key) is a *ConnError; a remote command that exits 255 is
// indistinguishable and reported the same way.
func (s *SSH) Run(ctx context.Context, argv ...string) ([]byte, error) {
	return s.run(ctx, nil, argv)
}

// RunInput implements InputRunner: Run with stdin as the remote command's standard input
// (ssh without -n). stdin never appears on a command line, here or on the host.
func (s *SSH) RunInput(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	if stdin == nil {
		stdin = []byte{}
	}
	return s.run(ctx, stdin, argv)
}

// run is Run, with stdin as the command's standard input when it is not nil.
func (s *SSH) run(ctx context.Context, stdin []byte, argv []string) ([]byte, error) {
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	var stdout bytes.Buffer
	err := s.stream(ctx, in, &stdout, argv)
	return stdout.Bytes(), err
}

// Stream runs argv on the host like Run, with stdin (nil: none, ssh -n) as the remote
// command's standard input and its standard output copied to stdout as it comes (nil:
// discarded): for data too large to hold in memory, such as a directory as a tar stream
// between two hosts. The data never appears on a command line. Errors as Run's.
func (s *SSH) Stream(ctx context.Context, stdin io.Reader, stdout io.Writer, argv ...string) error {
	if stdout == nil {
		stdout = io.Discard
	}
	return s.stream(ctx, stdin, stdout, argv)
}

func (s *SSH) stream(ctx context.Context, stdin io.Reader, stdout io.Writer, argv []string) error {
	if len(argv) == 0 {
		return errors.New("host: empty command")
	}
	if err := s.Connect(ctx); err != nil {
		return err
	}
	cmd, err := s.command(ctx, stdin, argv)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		if ee.ExitCode() == 255 {
			return &ConnError{Host: s.Name(), Msg: firstLine(stderr.String())}
		}
		return &ExitError{Host: s.Name(), Argv: argv, Code: ee.ExitCode(), Stderr: stderr.String()}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: %s: %w", s.Name(), argv[0], ctx.Err())
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return fmt.Errorf("%s: ssh: %w", s.Name(), err)
	}
	return nil
}

// command is the local ssh process that runs argv on the host over the master
// connection: stdin, when not nil, is its standard input (and ssh runs without -n).
func (s *SSH) command(ctx context.Context, stdin io.Reader, argv []string) (*exec.Cmd, error) {
	a, err := s.args()
	if err != nil {
		return nil, err
	}
	if stdin != nil {
		a = slices.DeleteFunc(a, func(x string) bool { return x == "-n" })
	}
	a = append(a, "-o", "ControlMaster=no", s.Dest, "--", Quote(argv))
	cmd := exec.CommandContext(ctx, "ssh", a...)
	// Its own process group: a Ctrl-C at the terminal reaches habench, which then cleans
	// up over SSH, and not the ssh clients doing that work (ctx ends them when it must).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.WaitDelay = 2 * time.Second
	return cmd, nil
}

// firstLine returns ssh's first line of message, skipping the '@' rules of its banners
// ("@@@@ ... @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @" becomes the
// warning's words).
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.Trim(l, "@ \t\r")); l != "" {
			return l
		}
	}
	return "ssh exited 255 without a message"
}

// Connect starts the destination's master connection unless this value already did: it
// connects and authenticates (BatchMode: a key that is refused, an unknown host key or an
// unreachable host fail at once, as *ConnError with ssh's message), then stays in the
// background for the commands. Run calls it; call it first to check a host's access.
func (s *SSH) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.master {
		return nil
	}
	a, err := s.args()
	if err != nil {
		return err
	}
	var resolved *Resolved // ssh -G's answer, once asked
	if s.Check != nil {
		r, err := s.Resolve(ctx)
		if err == nil {
			resolved = &r
			err = s.Check(r)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
	}
	// One master per ControlPath: another SSH value for the same destination may have
	// started it already (a second -M would find the socket taken and stay in the
	// background as a plain connection nobody can end).
	connecting.Lock()
	defer connecting.Unlock()
	unlock, err := lockSharedDir()
	if err != nil {
		return err
	}
	defer unlock()
	check := exec.CommandContext(ctx, "ssh", append(a, "-O", "check", s.Dest)...)
	if check.Run() == nil {
		s.master = true
		s.remember()
		return nil
	}
	if _, shared := controlState(); shared {
		// No master answers: a socket there is a killed master's, and would make the new
		// one a plain connection (see lockSharedDir).
		if resolved == nil {
			if r, err := s.Resolve(ctx); err == nil {
				resolved = &r
			}
		}
		if resolved != nil && resolved.ControlPath != "" {
			os.Remove(resolved.ControlPath)
		}
	}
	// stderr goes to a file, not a pipe: the master forked by -f keeps it open, and a
	// pipe would keep Wait waiting for the master to exit.
	ef, err := os.CreateTemp("", "hbssh-err-")
	if err != nil {
		return err
	}
	defer os.Remove(ef.Name())
	defer ef.Close()
	cmd := exec.CommandContext(ctx, "ssh", append(a, "-M", "-N", "-f", "-o", "ControlMaster=auto", "-o", "ControlPersist=60s", s.Dest)...)
	cmd.Stderr = ef
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Run()
	if err != nil {
		msg, _ := os.ReadFile(ef.Name())
		if ctx.Err() != nil {
			return fmt.Errorf("%s: connect: %w", s.Name(), ctx.Err())
		}
		return &ConnError{Host: s.Name(), Msg: firstLine(string(msg))}
	}
	s.master = true
	s.remember()
	return nil
}

// controlState returns the control directory and whether it is ControlDirEnv's.
func controlState() (dir string, shared bool) {
	control.Lock()
	defer control.Unlock()
	return control.dir, control.shared
}

// connecting serialises master start-ups across SSH values.
var connecting sync.Mutex

// lockSharedDir serialises master start-ups across the processes sharing ControlDirEnv's
// directory (flock(2) on its "connect.lock"; released by the returned function, or when
// the process dies): two that both found no master would both start one, and the second,
// finding the socket taken, would stay in the background as a plain connection nobody
// ends. Without ControlDirEnv it does nothing.
func lockSharedDir() (unlock func(), err error) {
	dir, shared := controlState()
	if !shared {
		return func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "connect.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ControlDirEnv, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: lock: %w", ControlDirEnv, err)
	}
	return func() { f.Close() }, nil
}

func (s *SSH) remember() {
	control.Lock()
	defer control.Unlock()
	for _, u := range control.users {
		if u == s {
			return
		}
	}
	control.users = append(control.users, s)
}

// Close implements Host: it ends the master connection of this destination, if any
// (`ssh -O exit`); another Run would open a new one.
func (s *SSH) Close() error {
	control.Lock()
	dir := control.dir
	control.Unlock()
	if dir == "" {
		return nil // no master was ever started in this process
	}
	return s.closeIn(dir)
}

func (s *SSH) closeIn(dir string) error {
	a, err := s.argsIn(dir)
	if err != nil {
		return err
	}
	s.closeReader()
	s.mu.Lock()
	s.master = false
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ssh", append(a, "-O", "exit", s.Dest)...)
	cmd.WaitDelay = time.Second
	cmd.Run() // no master: nothing to end
	return nil
}

// CloseMatching ends the master connections this process opened to the destinations
// match accepts (ssh destinations as given: "db1", "root@10.0.0.5"), and removes the
// control directory when no master is left: for a process that is done with some hosts
// and goes on with others (a test whose hosts go away while other tests' stay).
func CloseMatching(match func(dest string) bool) {
	control.Lock()
	var closing, keep []*SSH
	for _, u := range control.users {
		if match(u.Dest) {
			closing = append(closing, u)
		} else {
			keep = append(keep, u)
		}
	}
	dir, shared := control.dir, control.shared
	control.users = keep
	if len(keep) == 0 {
		control.dir = ""
	}
	control.Unlock()
	for _, u := range closing {
		u.closeIn(dir)
	}
	if len(keep) == 0 && dir != "" && !shared {
		os.RemoveAll(dir)
	}
}

// CloseAll ends every master connection this process opened and removes the control
// directory (with ControlDirEnv set: ends only this process's sessions, and leaves the
// masters and the directory to the next process). Call it once, when the process is done
// with its hosts (main does).
func CloseAll() {
	control.Lock()
	users, dir, shared := control.users, control.dir, control.shared
	control.users, control.dir = nil, ""
	control.Unlock()
	for _, u := range users {
		if shared {
			u.detach() // the master stays for the next process (ControlDirEnv)
			continue
		}
		u.closeIn(dir)
	}
	if dir != "" && !shared {
		os.RemoveAll(dir)
	}
}

// detach ends s's own sessions (ReadFile's shell) and forgets its master without ending
// it.
func (s *SSH) detach() {
	s.closeReader()
	s.mu.Lock()
	s.master = false
	s.mu.Unlock()
}

// Resolved is what ssh -G says a destination resolves to, by the ssh configuration,
// without connecting: the host name or address it will connect to, the port and the user,
// and whether a ProxyJump or ProxyCommand is configured.
type Resolved struct {
	HostName string
	Port     int
	User     string
	Proxy    string // "" when ssh connects directly
	// ControlPath is the master's socket for this destination, its %C expanded.
	ControlPath string
}

// Resolve runs `ssh -G` for the destination (configuration only: no connection, no name
// lookup unless the configuration canonicalises host names).
func (s *SSH) Resolve(ctx context.Context) (Resolved, error) {
	a, err := s.args()
	if err != nil {
		return Resolved{}, err
	}
	cmd := exec.CommandContext(ctx, "ssh", append(a, "-G", s.Dest)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Resolved{}, fmt.Errorf("%s: ssh -G: %v: %s", s.Name(), err, firstLine(stderr.String()))
	}
	var r Resolved
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "hostname":
			r.HostName = v
		case "port":
			r.Port, _ = strconv.Atoi(v)
		case "user":
			r.User = v
		case "proxyjump", "proxycommand":
			if v != "none" {
				r.Proxy = k + " " + v
			}
		case "controlpath":
			r.ControlPath = v
		}
	}
	return r, nil
}

// Quote renders argv as one POSIX shell command line: every argument in single quotes
// (a ' inside becomes '\”), so the remote shell runs exactly argv. Pure.
func Quote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+@%") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
