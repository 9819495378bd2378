package netem

import (
	"github.com/habench/habench/internal/testenv/prereq"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestKernelAvailableAgreesWithTC cross-checks the netlink probe against iproute2's tc
// in a throwaway namespace: both must agree on whether this kernel can attach netem.
func TestKernelAvailableAgreesWithTC(t *testing.T) {
	if os.Geteuid() != 0 {
		if err := KernelAvailable(); err == nil || !strings.Contains(err.Error(), "not root") {
			t.Fatalf("non-root probe: %v", err)
		}
		prereq.Missing(t, "not root: the cross-check needs root")
	}
	if _, err := exec.LookPath("tc"); err != nil {
		prereq.Missing(t, "tc (iproute2) missing")
	}
	ns := "hb-probetest"
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	exec.Command("ip", "-n", ns, "link", "set", "lo", "up").Run()
	tcErr := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms").Run()
	probe := KernelAvailable()
	if (tcErr == nil) != (probe == nil) {
		t.Fatalf("tc says netem usable=%v, probe says %v", tcErr == nil, probe)
	}
	t.Logf("kernel netem usable: %v (%v)", probe == nil, probe)
	if err := UserspaceAvailable(); err != nil {
		t.Logf("userspace link unusable: %v", err)
	}
}
