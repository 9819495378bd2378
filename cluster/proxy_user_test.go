package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// TestProxyUserBinaryRefused deploys a group with a proxy habench does not install
// (ProxySQL, MySQL Router) whose proxy.binary is missing or not found: Deploy refuses it
// in one line naming proxy.binary before it makes anything (the state directory stays
// empty; no server is needed, none is started).
func TestProxyUserBinaryRefused(t *testing.T) {
	for _, typ := range userProxies {
		for _, tc := range []struct{ binary, want string }{
			{"", `proxy.binary "": required for proxy ` + typ},
			{"/nonexistent/" + typ, `proxy.binary "/nonexistent/` + typ + `": not found or not executable`},
			{"no-such-" + typ + "-on-path", `proxy.binary "no-such-` + typ + `-on-path": not found`},
		} {
			dir := t.TempDir()
			spec := topology.Spec{Name: "pxbin", Kind: topology.Group, Flavor: topology.MySQL, Nodes: 3, Proxy: topology.ProxySpec{Type: typ, Binary: tc.binary}}
			_, err := (&cluster.Store{StateDir: dir}).Deploy(context.Background(), spec)
			var fe *topology.FieldError
			if err == nil || !errors.As(err, &fe) || fe.Field != "proxy.binary" || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s binary %q: deploy error %v, want one line with %q", typ, tc.binary, err, tc.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Errorf("%s binary %q: the deploy made %s", typ, tc.binary, filepath.Join(dir, ents[0].Name()))
			}
		}
	}
}

// userProxies are the proxies that run the user's binary (proxy.binary required).
var userProxies = []string{topology.ProxySQL, topology.MySQLRouter}
