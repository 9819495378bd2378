package cluster

import (
	"bytes"
	"fmt"
	"os"
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
	var pids []int
	if dir == "" {
		return nil
	}
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
			if bytes.HasPrefix(arg, []byte("--defaults-file="+dir+"/")) {
				if _, alive := procStartTicks(pid); alive {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}
