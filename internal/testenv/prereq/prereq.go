// Package prereq decides what a test does when a prerequisite is missing (a server
// binary, a device, root, a tool, a quiet enough machine): under HABENCH_REQUIRE_SERVERS=1
// (as in `make test` and CI) it fails, otherwise it skips, saying why once. It imports
// nothing of habench, so every test harness (testenv, testserver, testhost) and every
// package's own tests can use it without an import cycle.
package prereq

import (
	"fmt"
	"os"
	"testing"
)

// Required reports whether HABENCH_REQUIRE_SERVERS=1 is set (as in `make test` and CI):
// then a test whose prerequisite is missing fails instead of skipping.
func Required() bool { return os.Getenv("HABENCH_REQUIRE_SERVERS") == "1" }

// Missing ends t because a prerequisite (a binary, a device, root, a quiet enough
// machine) is missing: under HABENCH_REQUIRE_SERVERS=1 it fails t, otherwise it skips it.
// The message (format and args as for fmt.Sprintf) says why, once, either way.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (HABENCH_REQUIRE_SERVERS=1: a missing prerequisite fails the test)", msg)
	}
	t.Skip(msg)
}

// Need calls Missing with why unless why is "" (the form of cluster.NetNamespacesUsable and
// testserver.Available).
func Need(t testing.TB, why string) {
	t.Helper()
	if why != "" {
		Missing(t, "%s", why)
	}
}

// NeedErr calls Missing with what and err unless err is nil (the form of
// netem.UserspaceAvailable and exec.LookPath).
func NeedErr(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		Missing(t, "%s: %v", what, err)
	}
}

// Root calls Missing unless the test runs as root; why says what needs it.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "not root: %s", why)
	}
}
