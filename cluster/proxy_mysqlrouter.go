package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// MySQL Router as a sandbox member (topology.MySQLRouter): the user's binary
// (proxy.binary, checked before anything is deployed) started in the proxy's namespace,
// in a session of its own, with habench's static mysqlrouter.conf (proxy.RouterText) or
// a copy of the user's proxy.config; n.PID is Router's. Its routes' state is read on its
// REST API (basic authentication: RouterRESTUser, the benchmark user's password). Untried
// on a real MySQL Router here.
func init() {
	RegisterProgram(topology.MySQLRouter, Program{
		Start: startRouter, Health: routerHealth, State: routerState,
		Check: func(spec topology.Spec) error {
			_, err := userProxyBinary(spec.Proxy, topology.MySQLRouter)
			return err
		},
		Config: func(c *Cluster, n *Node) (string, error) {
			return proxyConfigShown(c, n, routerConfigFile, routerText(c, n))
		},
		Version: routerVersion,
	})
}

// The proxy's files in its directory (also Router's runtime and data folder).
const (
	routerConfigFile = "mysqlrouter.conf" // the configuration in effect
	routerPasswdFile = "mysqlrouter.pwd"  // the REST API's password file, mode 0600
	routerLogFile    = "mysqlrouter.log"  // Router's standard output and error (its log)
)

// RouterRESTUser is the account of Router's REST API in habench's configuration.
const RouterRESTUser = "habench"

// routerText returns the function that writes habench's mysqlrouter.conf for c now (the
// writer first in the write route, the others in the read route).
func routerText(c *Cluster, n *Node) func() (string, error) {
	return func() (string, error) {
		cfg := proxy.RouterConfig{
			Cluster: c.Name, Backends: proxyBackends(context.Background(), c),
			Write: proxyAddr(c, n.Host, "write"), HTTP: proxyAddr(c, n.Host, "http"),
			Dir: n.Dir, PasswdFile: filepath.Join(n.Dir, routerPasswdFile),
		}
		if c.Spec.Proxy.HasRead() {
			cfg.Read = proxyAddr(c, n.Host, "read")
		}
		return proxy.RouterText(cfg)
	}
}

// writeRouterPasswd writes the REST API's password file (mode 0600) with a new random
// salt.
func writeRouterPasswd(c *Cluster, n *Node) error {
	salt := make([]byte, 8)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	line, err := proxy.RouterPasswdLine(RouterRESTUser, c.Password, hex.EncodeToString(salt))
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(n.Dir, routerPasswdFile), []byte(line), 0o600)
}

// startRouter is the Program's Start: it writes mysqlrouter.conf (and the REST API's
// password file) into n.Dir, starts the user's Router on it, and waits until its write
// route accepts connections and, with habench's configuration, its REST API answers.
// Errors: no proxy.binary, the files, the process exits first, the timeout.
func startRouter(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	if c.Hosts != nil {
		return fmt.Errorf("a proxy on the user's hosts is not supported yet")
	}
	bin, err := userProxyBinary(c.Spec.Proxy, topology.MySQLRouter)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	if c.Spec.Proxy.Config == "" {
		if err := writeRouterPasswd(c, n); err != nil {
			return err
		}
	}
	if err := proxyConfigFile(c, n, routerConfigFile, routerText(c, n)); err != nil {
		return err
	}
	return startProxyProcess(ctx, s, c, n, proxyLaunch{name: "mysqlrouter", bin: bin, args: []string{"-c", filepath.Join(n.Dir, routerConfigFile)}, log: routerLogFile,
		ready: func(ctx context.Context) string {
			if why := writeEndpointAccepts(c, n); why != "" || c.Spec.Proxy.Config != "" {
				return why
			}
			if _, err := routerState(ctx, c, n); err != nil {
				return "REST API: " + err.Error()
			}
			return ""
		}})
}

// routerGet decodes the REST API's items at path (under proxy.RouterAPIBase) into out.
// Error: the request fails, the status is not 200, the answer is not Router's shape.
func routerGet[T proxy.RouterDestination | proxy.RouterConnection](ctx context.Context, base, password, path string, out *[]T) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+proxy.RouterAPIBase+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(RouterRESTUser, password)
	resp, err := statsClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %s", path, resp.Status)
	}
	return proxy.ParseRouterItems(resp.Body, out)
}

// routerState is the Program's State: each route's destinations and connections read on
// Router's REST API (1 s timeout in all) as proxy.Server rows (proxy.RouterServers).
// Error: the REST API does not answer or refuses (with the user's proxy.config, whose
// account habench does not know).
func routerState(ctx context.Context, c *Cluster, n *Node) ([]proxy.Server, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	base := "http://" + net.JoinHostPort(n.Host, strconv.Itoa(c.ProxyPort("http")))
	var backends []proxy.Backend
	for _, m := range c.Nodes {
		backends = append(backends, proxy.Backend{Name: m.Name, Host: m.Host, Port: m.Port})
	}
	routes := []string{"write"}
	if c.Spec.Proxy.HasRead() {
		routes = append(routes, "read")
	}
	var out []proxy.Server
	for _, r := range routes {
		var dests []proxy.RouterDestination
		var conns []proxy.RouterConnection
		if err := routerGet(ctx, base, c.Password, "/routes/"+r+"/destinations", &dests); err != nil {
			return nil, err
		}
		if err := routerGet(ctx, base, c.Password, "/routes/"+r+"/connections", &conns); err != nil {
			return nil, err
		}
		out = append(out, proxy.RouterServers(r, dests, conns, backends)...)
	}
	return out, nil
}

// routerHealth is the proxy's line in status: "mysqlrouter running, write n1, read 2 up:
// n2, n3" (its static routes, not the nodes' health), or why its REST API did not say.
func routerHealth(ctx context.Context, c *Cluster, n *Node) string {
	ss, err := routerState(ctx, c, n)
	if err != nil {
		return "mysqlrouter running, REST API: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	return "mysqlrouter running, " + proxy.Summary(ss)
}

// routerVersion is the first line of `mysqlrouter --version` of proxy.binary, "" when it
// cannot be run.
func routerVersion(c *Cluster) string {
	bin, err := userProxyBinary(c.Spec.Proxy, topology.MySQLRouter)
	if err != nil {
		return ""
	}
	return programFirstLine(bin, "--version")
}
