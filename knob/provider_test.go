package knob

import (
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// restartsProvider stands for a provider other than the local sandbox that restarts nodes
// and rewrites their option files (sandboxes on the user's hosts): knob must restart for
// read-only knobs on it by its answers, never by its name.
type restartsProvider struct{ cluster.Provider }

func init() {
	cluster.RegisterProvider(restartsProvider{(&cluster.Cluster{}).Provider()})
}

func (restartsProvider) Name() string                            { return "knobtesthosts" }
func (restartsProvider) Why(*cluster.Cluster, cluster.Op) string { return "" }

// TestCannotRestartAsksProvider: a read-only knob restarts nodes exactly when the provider
// offers restarts and option files and a Restarter is given; the existing provider's
// refusal keeps its text ("does not restart the servers of existing cluster NAME").
func TestCannotRestartAsksProvider(t *testing.T) {
	withRestarter := Options{Restarter: &cluster.Store{}}
	for _, tc := range []struct {
		provider string
		opt      Options
		want     string // "" = restarts
	}{
		{topology.ProviderSandbox, withRestarter, ""},
		{topology.ProviderSandbox, Options{}, "restarting nodes is not possible here"},
		{"knobtesthosts", withRestarter, ""},
		{topology.ProviderExisting, withRestarter, "habench does not restart the servers of existing cluster pc1: set it in their configuration yourself"},
		{"nosuchprovider", withRestarter, "habench does not restart the servers of nosuchprovider cluster pc1"},
	} {
		c := &cluster.Cluster{Name: "pc1", ProviderName: tc.provider}
		got := cannotRestart(c, tc.opt)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s (restarter %v): %q, want %q", tc.provider, tc.opt.Restarter != nil, got, tc.want)
		}
	}
}
