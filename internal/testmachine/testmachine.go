// Package testmachine hands out what tests running at the same time on one machine must
// not share, and lets a measuring test run alone. Tests run side by side (t.Parallel
// within a package, packages in parallel with go test -p 3), and network namespaces,
// bridges, interface names and address blocks are machine-wide, so:
//
//   - Name gives a cluster name no other test on the machine holds (any process);
//   - Subnet gives N of a lab's 198.18.N.0/24 that no other lab uses;
//   - Share marks a test that starts servers or namespaces (the harnesses call it), at
//     most MaxSharedEnv of them at once when that is set, and Alone makes a test that
//     measures throughput or timing wait until every such test on the machine has
//     ended, and keeps new ones waiting until it ends.
//
// Claims are files under Dir, each held with flock(2) by the claiming process for as long
// as the test runs: a claim of a process that died is free again, with no PID bookkeeping.
// It imports nothing of habench, so every harness can use it.
package testmachine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Dir holds the claims and locks (tmpfs, emptied at boot).
var Dir = "/run/habench-tests"

const digits = "0123456789abcdefghijklmnopqrstuvwxyz"

// start spreads one process's names over the space, so that a crashed run's leftovers
// (a namespace of the same name) rarely meet the next run's first choice.
var start = (os.Getpid()*7919 + int(time.Now().UnixNano()%100003)) % (36 * 36 * 36)

// Name returns prefix (1 to 7 characters, a lowercase letter first) plus 3 characters,
// a valid cluster name that no other test on this machine holds until t ends. It fails
// t on a bad prefix or when every suffix of the prefix is held.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	if len(prefix) < 1 || len(prefix) > 7 || prefix[0] < 'a' || prefix[0] > 'z' {
		t.Fatalf("testmachine.Name: prefix %q: want 1 to 7 characters starting with a lowercase letter", prefix)
	}
	const space = 36 * 36 * 36
	for i := 0; i < space; i++ {
		n := (start + i) % space
		name := prefix + string([]byte{digits[n/1296], digits[n/36%36], digits[n%36]})
		if claim(t, "names", name) {
			return name
		}
	}
	t.Fatalf("testmachine.Name: every name with prefix %q is held", prefix)
	return ""
}

// Subnet returns N (2 to 254) of a lab network 198.18.N.0/24 that no other test on this
// machine holds until t ends and that no interface here has an address in.
func Subnet(t testing.TB) int {
	t.Helper()
	out, _ := exec.Command("ip", "-o", "addr").Output()
	for n := 2; n <= 254; n++ {
		if strings.Contains(string(out), fmt.Sprintf(" 198.18.%d.", n)) {
			continue
		}
		if claim(t, "subnets", fmt.Sprint(n)) {
			return n
		}
	}
	t.Fatal("testmachine.Subnet: no free 198.18.N.0/24")
	return 0
}

// claim takes Dir/kind/value for t (until its cleanup) when nobody alive holds it.
func claim(t testing.TB, kind, value string) bool {
	t.Helper()
	dir := filepath.Join(Dir, kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testmachine: %v", err)
	}
	path := filepath.Join(dir, value)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("testmachine: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	held.Lock()
	taken := held.files[path]
	if !taken {
		if held.files == nil {
			held.files = map[string]bool{}
		}
		held.files[path] = true
	}
	held.Unlock()
	if taken { // flock does not exclude this process's own descriptors
		f.Close()
		return false
	}
	fmt.Fprintf(f, "%d %s\n", os.Getpid(), t.Name())
	t.Cleanup(func() {
		os.Remove(path)
		f.Close()
		held.Lock()
		delete(held.files, path)
		held.Unlock()
	})
	return true
}

// held is what this process has claimed (flock is per open file: two descriptors of one
// process on one file would both get an exclusive lock).
var held struct {
	sync.Mutex
	files map[string]bool
}

// The machine lock: Share takes it shared, Alone exclusive. The gate in front of it makes
// a waiting Alone stop new Share calls, so a stream of short shared tests cannot starve it.
const (
	gateFile    = "gate.lock"
	machineFile = "machine.lock"
)

var sharing struct {
	sync.Mutex
	by    map[string]bool // top-level test names of this process holding the lock shared
	alone map[string]bool // ... holding it alone (Share is then a no-op for them)
}

// Share marks t as a test that starts servers, namespaces or other load on this machine:
// it waits while a test that called Alone runs or waits (anywhere on the machine), saying
// so in t's log when that took over a second, then holds the machine lock shared until t
// ends. It is idempotent within a test and its subtests; test harnesses (sandboxes, test
// servers, labs) call it for their tests.
func Share(t testing.TB) {
	t.Helper()
	top := topName(t.Name())
	sharing.Lock()
	if sharing.by[top] || sharing.alone[top] {
		sharing.Unlock()
		return
	}
	if sharing.by == nil {
		sharing.by = map[string]bool{}
	}
	sharing.by[top] = true
	sharing.Unlock()
	start := time.Now()
	gate := lockFile(t, gateFile, syscall.LOCK_SH)
	m := lockFile(t, machineFile, syscall.LOCK_SH)
	gate.Close()
	if w := time.Since(start); w > time.Second {
		t.Logf("waited %v for a test running alone (testmachine.Alone) to end", w.Round(time.Second))
	}
	takeSlot(t) // released by claim's own cleanup
	t.Cleanup(func() {
		m.Close()
		sharing.Lock()
		delete(sharing.by, top)
		sharing.Unlock()
	})
}

// MaxSharedEnv, when set to N > 0, is how many tests may share the machine at once
// (Share waits for one of N slots, machine-wide): make test sets it, so that more
// packages and tests in parallel fill the cores while some tests wait, without running
// more tests at once than the cores can serve (at 8, a MySQL query took over 2 s).
const MaxSharedEnv = "HABENCH_TEST_MAX_SHARED"

// slotLimit is MaxSharedEnv's value v as a number of tests: 0 (no limit) for "", an
// error naming it for anything but a positive number.
func slotLimit(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a number of tests, at least 1", MaxSharedEnv, v)
	}
	return n, nil
}

// takeSlot claims one of the MaxSharedEnv slots (claim: Dir/slots/K) for t, waiting up
// to 30 minutes for one, saying so in t's log when that took over a second; false without
// a limit. It fails t on a value that is not a positive number.
func takeSlot(t testing.TB) bool {
	t.Helper()
	n, err := slotLimit(os.Getenv(MaxSharedEnv))
	if err != nil {
		t.Fatalf("testmachine: %v", err)
	}
	if n == 0 {
		return false
	}
	start := time.Now()
	for deadline := start.Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for k := 0; k < n; k++ {
			if claim(t, "slots", strconv.Itoa(k)) {
				if w := time.Since(start); w > time.Second {
					t.Logf("waited %v for one of the %d tests sharing the machine (%s) to end", w.Round(time.Second), n, MaxSharedEnv)
				}
				return true
			}
		}
	}
	t.Fatalf("testmachine: no free slot of %d (%s) in 30 minutes", n, MaxSharedEnv)
	return false
}

// Alone makes t the only test on the machine that starts servers or load: it waits until
// every test holding Share has ended (new ones wait from now on), and keeps them waiting
// until t ends. Tests that measure throughput, latency or timing ratios call it first
// thing (Share is then a no-op for t); it fails t when t already shares the machine (that
// would wait for itself). In -short mode it skips t: such a test needs real servers.
func Alone(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("a test that measures on real servers: skipped in -short mode")
	}
	top := topName(t.Name())
	sharing.Lock()
	self := sharing.by[top]
	sharing.Unlock()
	if self {
		t.Fatalf("testmachine.Alone: %s already shares the machine (call Alone before any harness)", top)
	}
	start := time.Now()
	gate := lockFile(t, gateFile, syscall.LOCK_EX)
	m := lockFile(t, machineFile, syscall.LOCK_EX)
	if w := time.Since(start); w > time.Second {
		t.Logf("waited %v for the tests sharing the machine to end", w.Round(time.Second))
	}
	sharing.Lock()
	if sharing.alone == nil {
		sharing.alone = map[string]bool{}
	}
	sharing.alone[top] = true
	sharing.Unlock()
	// Registered before what the test registers after (the harnesses' cleanups): released
	// last, after its servers are gone.
	t.Cleanup(func() {
		sharing.Lock()
		delete(sharing.alone, top)
		sharing.Unlock()
		m.Close()
		gate.Close()
	})
}

// lockFile opens Dir/name and flocks it with how, waiting at most 30 minutes.
func lockFile(t testing.TB, name string, how int) *os.File {
	t.Helper()
	if err := os.MkdirAll(Dir, 0o755); err != nil {
		t.Fatalf("testmachine: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(Dir, name), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("testmachine: %v", err)
	}
	deadline := time.Now().Add(30 * time.Minute)
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return f
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			t.Fatalf("testmachine: lock %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func topName(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}
