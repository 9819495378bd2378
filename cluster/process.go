package cluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStartTicks returns field 22 (starttime, clock ticks since boot) of /proc/PID/stat
// and whether the process is a zombie or gone.
func procStartTicks(pid int) (ticks uint64, alive bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// comm may contain spaces: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	t, _ := strconv.ParseUint(f[19], 10, 64)
	return t, true
}

// ourProcess reports whether pid is still the process recorded with ticks.
func ourProcess(pid int, ticks uint64) bool {
	if pid <= 0 {
		return false
	}
	t, alive := procStartTicks(pid)
	return alive && (ticks == 0 || t == ticks)
}

// signalAndWait sends sig to pid and waits up to d for it to exit; true if it exited.
func signalAndWait(pid int, ticks uint64, sig syscall.Signal, d time.Duration) bool {
	if !ourProcess(pid, ticks) {
		return true
	}
	syscall.Kill(pid, sig)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !ourProcess(pid, ticks) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return !ourProcess(pid, ticks)
}

// processesUnder returns the PIDs of live servers started with --defaults-file=<dir>/...:
// servers whose PID never reached the state file (habench killed between start and save).
// Only that exact argument counts, so a client or `tail -f` naming a file in the
// directory is never mistaken for a server.
func processesUnder(dir string) []int {
	if dir == "" {
		return nil
	}
	return processesWithArg("--defaults-file=" + dir + "/")
}

// auxProcesses returns the PIDs of live processes with an argument that is a path in aux
// member n's directory (garbd's log, a proxy's configuration files).
func auxProcesses(n *Node) []int {
	if n.Dir == "" {
		return nil
	}
	return processesWithArg(n.Dir + "/")
}

// LinkStateArg is the argument that marks a cluster's detached link process (`habench
// netem serve ... --link-state=<cluster dir>/links.json`): destroy and `netem clear` find
// the process by it even when its PID was never recorded.
const LinkStateArg = "--link-state="

// LinkProcesses returns the PIDs of live link processes of cluster c (see LinkStateArg).
func LinkProcesses(c *Cluster) []int {
	if c.path == "" {
		return nil
	}
	return processesWithArg(LinkStateArg + filepath.Dir(c.path) + "/")
}

// processesWithArg returns the live processes (other than this one) with an argument
// starting with prefix.
func processesWithArg(prefix string) []int {
	return processesWithArgFunc(func(arg []byte) bool { return bytes.HasPrefix(arg, []byte(prefix)) })
}

// processesWithArgFunc returns the live processes (other than this one) with an argument
// for which match is true.
func processesWithArgFunc(match func(arg []byte) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmd, []byte{0}) {
			if match(arg) {
				if _, alive := procStartTicks(pid); alive {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// ProcessStartTicks returns pid's start time in clock ticks since boot (/proc/PID/stat
// field 22), which with the PID identifies a process; false if pid is not running.
func ProcessStartTicks(pid int) (uint64, bool) { return procStartTicks(pid) }

// ProcessAlive reports whether pid is running and (ticks != 0) is the process that had
// start time ticks: a reused PID is never taken for it.
func ProcessAlive(pid int, ticks uint64) bool { return ourProcess(pid, ticks) }

// Terminate stops the process pid/ticks: SIGTERM, SIGKILL after grace; nil if it is gone
// (or was never running), an error if it survives SIGKILL for 5 s.
func Terminate(pid int, ticks uint64, grace time.Duration) error {
	if signalAndWait(pid, ticks, syscall.SIGTERM, grace) || signalAndWait(pid, ticks, syscall.SIGKILL, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("pid %d survived SIGKILL", pid)
}

// ServerProcess returns node name's server process as c's state file records it now: its
// PID and start time (clock ticks since boot, /proc/PID/stat field 22), PID 0 when none is
// recorded. The file is read again each call because another habench process (`habench
// fault restart`) may have started the server again since c was loaded. A cluster that was
// never saved answers from memory. Errors: the state file cannot be read, or has no node
// called name.
func (c *Cluster) ServerProcess(name string) (pid int, startTicks uint64, err error) {
	cur := c
	if c.path != "" {
		if cur, err = loadState(c.path); err != nil {
			return 0, 0, err
		}
	}
	n := cur.Member(name)
	if n == nil {
		return 0, 0, fmt.Errorf("cluster %s: no member %q in its state file", c.Name, name)
	}
	return n.PID, n.StartTicks, nil
}

// socketServer returns the pid of the process serving unix socket path (SO_PEERCRED of a
// connection to it), 0 when nothing answers there or the peer is not a MySQL/MariaDB
// server.
func socketServer(path string) int {
	if path == "" {
		return 0
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer syscall.Close(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		return 0
	}
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil || cred.Pid <= 0 {
		return 0
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cred.Pid))
	if base := filepath.Base(exe); base != "mysqld" && base != "mariadbd" {
		return 0
	}
	return int(cred.Pid)
}

// Adopt looks for node n's server when its recorded process is gone: a server restarted
// outside habench (by hand, by a service manager) still listens on the node's socket.
// When one does, its pid and start time replace the recorded ones in the state file, so
// that status, faults and destroy find it; the pid is returned (0: none, or a provider
// that cannot look: an optional Adopter).
func (c *Cluster) Adopt(n *Node) int {
	if a, ok := c.Provider().(Adopter); ok {
		return a.Adopt(c, n)
	}
	return 0
}

// Adopter is a Provider that can find a node's server restarted outside habench.
type Adopter interface {
	Adopt(c *Cluster, n *Node) int
}

// Adopt finds a server listening on the node's unix socket on this machine.
func (sandboxProvider) Adopt(c *Cluster, n *Node) int {
	if n.Running() {
		return 0
	}
	pid := socketServer(n.Socket)
	if pid == 0 {
		return 0
	}
	ticks, alive := procStartTicks(pid)
	if !alive {
		return 0
	}
	n.PID, n.StartTicks = pid, ticks
	if err := c.save(); err != nil {
		return 0
	}
	return pid
}
