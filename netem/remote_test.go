package netem

import (
	"context"
	"github.com/habench/habench/internal/testenv/prereq"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/host"
)

// wrapped is this machine with every command run under a prefix (setpriv, env).
type wrapped struct {
	host.Local
	prefix []string
}

func (w wrapped) Run(ctx context.Context, argv ...string) ([]byte, error) {
	return w.Local.Run(ctx, append(append([]string{}, w.prefix...), argv...)...)
}

// TestCheckHost: the host probe (run here, as it runs on a user's host) finds what this
// machine lacks, changing nothing: sch_netem (absent from this kernel, present on others),
// /dev/net/tun (hidden in a private mount namespace), tc (hidden by an empty PATH), and
// CAP_NET_ADMIN (dropped with setpriv).
func TestCheckHost(t *testing.T) {
	prereq.Root(t, "the probe's throwaway namespace needs CAP_SYS_ADMIN")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := CheckHost(ctx, host.Local{})
	if err != nil || len(c.Problems) > 0 {
		t.Fatalf("as root: %+v %v", c, err)
	}
	if kernelErr := KernelAvailable(); (kernelErr == nil) != (c.NoNetem == "") {
		t.Errorf("NoNetem %q, but KernelAvailable says %v", c.NoNetem, kernelErr)
	} else if kernelErr != nil && !strings.Contains(c.NoNetem, "no sch_netem in the kernel") {
		t.Errorf("NoNetem %q", c.NoNetem)
	}
	if tunErr := UserspaceAvailable(); (tunErr == nil) != (c.NoTUN == "") {
		t.Errorf("NoTUN %q, but UserspaceAvailable says %v", c.NoTUN, tunErr)
	}
	// /dev/net/tun hidden (an empty tmpfs over /dev/net in a private mount namespace):
	// the link agent cannot run there.
	c, err = CheckHost(ctx, wrapped{prefix: []string{"unshare", "-m", "sh", "-c", `mount -t tmpfs none /dev/net && exec "$@"`, "sh"}})
	if err != nil || !strings.Contains(c.NoTUN, "/dev/net/tun missing") {
		t.Errorf("without /dev/net/tun: %+v %v", c, err)
	}
	// A PATH with the probe's tools but tc.
	bin := t.TempDir()
	for _, tool := range []string{"sh", "sed", "id", "grep", "uname", "find", "head", "unshare"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, bin+"/"+tool); err != nil {
			t.Fatal(err)
		}
	}
	c, err = CheckHost(ctx, wrapped{prefix: []string{"env", "PATH=" + bin}})
	if err != nil || len(c.Problems) == 0 || !strings.Contains(c.Problems[0], "no tc") {
		t.Errorf("without tc: %+v %v", c, err)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatalf("setpriv (util-linux) missing: %v", err)
	}
	c, err = CheckHost(ctx, wrapped{prefix: []string{"setpriv", "--bounding-set", "-net_admin", "--inh-caps", "-net_admin"}})
	if err != nil || len(c.Problems) == 0 || !strings.Contains(strings.Join(c.Problems, ";"), "has no CAP_NET_ADMIN: it cannot change qdiscs") {
		t.Errorf("without CAP_NET_ADMIN: %+v %v", c, err)
	}
}

// TestHostsBackend: a run's delay, jitter and loss go to the link agents when a host lacks
// sch_netem and has a TUN device (then on every host), else to tc over SSH: on kernels
// with sch_netem, and where the agent cannot run either (tc then refuses the delay).
func TestHostsBackend(t *testing.T) {
	ok := HostCheck{}
	noNetem := HostCheck{NoNetem: "no sch_netem in the kernel (Unknown qdisc \"netem\")"}
	noTUN := HostCheck{NoTUN: "no TUN device (/dev/net/tun missing)"}
	neither := HostCheck{NoNetem: noNetem.NoNetem, NoTUN: noTUN.NoTUN}
	for _, c := range []struct {
		name   string
		checks []HostCheck
		want   string
	}{
		{"no hosts", nil, BackendRemote},
		{"every host has sch_netem", []HostCheck{ok, ok, ok}, BackendRemote},
		{"sch_netem, no TUN", []HostCheck{noTUN, noTUN}, BackendRemote},
		{"no host has sch_netem", []HostCheck{noNetem, noNetem}, BackendHostAgent},
		{"the last host lacks sch_netem", []HostCheck{ok, ok, noNetem}, BackendHostAgent},
		{"no sch_netem and no TUN", []HostCheck{neither, neither}, BackendRemote},
		{"one host without either, another with a TUN", []HostCheck{neither, noNetem}, BackendHostAgent},
	} {
		if got := HostsBackend(c.checks); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
