package proxy

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// Backend is one SQL server behind the proxy: its member name ("n1"), the address and
// the port its clients connect to.
type Backend struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

// Addr is b's "host:port".
func (b Backend) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// backendName is what HAProxy accepts as a server name and habench puts in a check's path.
var backendName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checkBackends validates a proxy's servers: at least one, valid distinct names, an
// address and a port each. Error: one line naming the backend and the field.
func checkBackends(bs []Backend) error {
	if len(bs) == 0 {
		return fmt.Errorf("proxy backends: none, want at least one server")
	}
	seen := map[string]bool{}
	for _, b := range bs {
		switch {
		case !backendName.MatchString(b.Name):
			return fmt.Errorf("proxy backend name %q: want 1 to 64 of A-Z a-z 0-9 _ . -", b.Name)
		case seen[b.Name]:
			return fmt.Errorf("proxy backend name %q: given twice", b.Name)
		case b.Host == "" || strings.ContainsAny(b.Host, " \t\n#\",;"):
			return fmt.Errorf("proxy backend %s host %q: want an address", b.Name, b.Host)
		case b.Port < 1 || b.Port > 65535:
			return fmt.Errorf("proxy backend %s port %d: want 1 to 65535", b.Name, b.Port)
		}
		seen[b.Name] = true
	}
	return nil
}

// checkListen validates a listen address "host:port" called name.
func checkListen(name, v string) error {
	if _, p, err := net.SplitHostPort(v); err != nil || p == "" || strings.ContainsAny(v, " \t\n#\",;") {
		return fmt.Errorf("proxy %s address %q: want host:port", name, v)
	}
	return nil
}
