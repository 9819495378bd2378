package netem

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunAgentBadConfig: the link agent refuses a bad first line in one line naming the
// field and the value, before it creates anything, and exits with an error.
func TestRunAgentBadConfig(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no configuration on stdin"},
		{"{not json\n", "configuration:"},
		{`{"self":"db1","tun":"hbagx","links":[]}` + "\n", `self "db1": want an IPv4 address`},
		{`{"self":"::1","tun":"hbagx","links":[]}` + "\n", `self "::1": want an IPv4 address`},
		{`{"self":"10.0.0.1","tun":"","links":[]}` + "\n", `tun "": want a device name`},
		{`{"self":"10.0.0.1","tun":"hbag-far-too-long-name","links":[]}` + "\n", `tun "hbag-far-too-long-name"`},
	} {
		var out bytes.Buffer
		err := RunAgent(strings.NewReader(c.in), &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("input %q: error %v, want one line with %q", c.in, err, c.want)
		}
	}
}

// TestAgentTun: the TUN name fits IFNAMSIZ and differs between clusters.
func TestAgentTun(t *testing.T) {
	a, b := AgentTun("hl1"), AgentTun("hl2")
	if len(a) > 15 || !strings.HasPrefix(a, "hbag") || a == b || a != AgentTun("hl1") {
		t.Errorf("AgentTun: %q %q", a, b)
	}
}
