package experiment

import (
	"strings"
	"testing"

	"github.com/habench/habench/netem"
)

// TestAgentHostRefusal: the check before a deploy on hosts applies the link agent's rule:
// one host without sch_netem puts the agent on every host, so a host with sch_netem but
// no TUN device is refused then (naming it and the host without netem); a host with
// neither is refused; hosts that all have sch_netem, or all a TUN device, pass.
func TestAgentHostRefusal(t *testing.T) {
	hosts := []string{"db1", "db2"}
	ok := netem.HostCheck{}
	noNetem := netem.HostCheck{NoNetem: "no sch_netem module"}
	noTUN := netem.HostCheck{NoTUN: "no /dev/net/tun"}
	neither := netem.HostCheck{NoNetem: "no sch_netem module", NoTUN: "no /dev/net/tun"}
	for _, tc := range []struct {
		checks []netem.HostCheck
		host   int
		want   string
	}{
		{[]netem.HostCheck{ok, ok}, -1, ""},
		{[]netem.HostCheck{noTUN, noTUN}, -1, ""}, // netem everywhere: no agent
		{[]netem.HostCheck{noNetem, noNetem}, -1, ""},
		{[]netem.HostCheck{noNetem, noTUN}, 1, "no /dev/net/tun, and host db1 lacks sch_netem (no sch_netem module), so every host needs the link agent"},
		{[]netem.HostCheck{noTUN, noNetem}, 0, "host db2 lacks sch_netem"},
		{[]netem.HostCheck{ok, neither}, 1, "no sch_netem module, and no /dev/net/tun"},
	} {
		i, why := agentHostRefusal(hosts, tc.checks)
		if i != tc.host || (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%+v: host %d %q, want host %d %q", tc.checks, i, why, tc.host, tc.want)
		}
	}
}
