package topology

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ProxyName is the member name of a topology's proxy (`proxy:`): faults, links, sites
// and samples call it so.
const ProxyName = "proxy"

// RoleProxy is the role of a proxy member: it takes the clients' connections and passes
// them to the servers; it holds no data.
const RoleProxy = Role("proxy")

// ProxySpec is a topology's `proxy:` section: a proxy in front of its servers, a member
// of its own (its own network namespace in a sandbox; on provider hosts, a member placed
// on one of the hosts, Spec.AuxHostOf). Written as a map, or as the type alone
// (`proxy: haproxy`). The zero value is no proxy.
//
//	proxy:
//	  type: haproxy          # a registered proxy (RegisterProxy)
//	  check_interval: 1s     # time between two health checks of one backend
//	  fall: 3                # failed checks in a row that mark a backend down
//	  rise: 2                # passed checks in a row that mark it up again
//	  read: true             # a read endpoint over the nodes that are not the writer
//	  config: my.cfg         # the user's own configuration instead of habench's
type ProxySpec struct {
	// Type is a registered proxy (ProxyTypes): "haproxy". Empty: no proxy.
	Type string `json:"type" yaml:"type"`
	// CheckInterval is the time between two health checks of one backend (HAProxy's
	// inter); default DefaultCheckInterval. A given 0 is kept as ZeroGivenInterval and
	// refused.
	CheckInterval time.Duration `json:"check_interval,omitempty" yaml:"check_interval,omitempty"`
	// Fall and Rise are the failed (passed) checks in a row that mark a backend down
	// (up); defaults 3 and 2, HAProxy's. A given 0 is kept as ZeroGivenCount and refused.
	Fall int `json:"fall,omitempty" yaml:"fall,omitempty"`
	Rise int `json:"rise,omitempty" yaml:"rise,omitempty"`
	// Read, when true, adds a read endpoint over the nodes that are not the writer;
	// default true with 2 or more nodes, refused on 1.
	Read *bool `json:"read,omitempty" yaml:"read,omitempty"`
	// Config is a file with the user's own configuration for the proxy, used instead of
	// the one habench writes (and recorded in the manifest as it was).
	Config string `json:"config,omitempty" yaml:"config,omitempty"`
	// Binary is the proxy's program (default: the type's own, found on PATH; on provider
	// hosts an absolute path on the proxy's host, default the packaged one there).
	Binary string `json:"binary,omitempty" yaml:"binary,omitempty"`
}

// DefaultCheckInterval is a proxy's health-check interval when the spec gives none.
const DefaultCheckInterval = time.Second

// MinCheckInterval is the shortest health-check interval a spec may give.
const MinCheckInterval = 10 * time.Millisecond

// ZeroGivenInterval and ZeroGivenCount stand for a health-check field written as 0
// (`fall: 0`), kept apart from one not written (the zero value, which takes the default
// or the spec's) so that Validate refuses it and names it as written, "0" or "0s". Any
// other value is kept as written, a negative one too.
const (
	ZeroGivenInterval = time.Duration(math.MinInt64)
	ZeroGivenCount    = math.MinInt
)

// ProxyChecks are a proxy's health checks: the part of its ProxySpec a sweep's via axis
// may change on a deployed proxy. A zero field is not given (the spec's stays); one
// written as 0 is ZeroGivenInterval or ZeroGivenCount.
type ProxyChecks struct {
	// CheckInterval is the time between two checks of one backend (HAProxy's inter).
	CheckInterval time.Duration `json:"check_interval,omitempty"`
	// Fall and Rise are the failed (passed) checks in a row that mark a backend down (up).
	Fall int `json:"fall,omitempty"`
	Rise int `json:"rise,omitempty"`
}

// IsZero reports whether o gives no field.
func (o ProxyChecks) IsZero() bool { return o == ProxyChecks{} }

// String is the fields given, in the words of a table's label: "check 2s fall 2", "rise
// 1"; "" when none is.
func (o ProxyChecks) String() string {
	var parts []string
	if o.CheckInterval != 0 {
		parts = append(parts, "check "+o.CheckInterval.String())
	}
	if o.Fall != 0 {
		parts = append(parts, fmt.Sprintf("fall %d", o.Fall))
	}
	if o.Rise != 0 {
		parts = append(parts, fmt.Sprintf("rise %d", o.Rise))
	}
	return strings.Join(parts, " ")
}

// Validate checks the fields given (nonzero; ZeroGivenInterval and ZeroGivenCount are a
// given 0): a check interval of at least MinCheckInterval, fall and rise of 1 to 100.
// Error: a *FieldError on prefix.check_interval, prefix.fall or prefix.rise ("proxy.fall")
// with the value as written ("-2", "0s").
func (o ProxyChecks) Validate(prefix string) error {
	if o.CheckInterval != 0 && o.CheckInterval < MinCheckInterval {
		v := o.CheckInterval
		if v == ZeroGivenInterval {
			v = 0
		}
		return &FieldError{prefix + ".check_interval", v, fmt.Sprintf("want at least %s", MinCheckInterval)}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{".fall", o.Fall}, {".rise", o.Rise}} {
		if f.v != 0 && (f.v < 1 || f.v > 100) {
			v := f.v
			if v == ZeroGivenCount {
				v = 0
			}
			return &FieldError{prefix + f.name, v, "want 1 to 100 checks"}
		}
	}
	return nil
}

// Checks are p's health checks.
func (p ProxySpec) Checks() ProxyChecks {
	return ProxyChecks{CheckInterval: p.CheckInterval, Fall: p.Fall, Rise: p.Rise}
}

// With is p with the fields o gives in place of its own.
func (p ProxySpec) With(o ProxyChecks) ProxySpec {
	if o.CheckInterval != 0 {
		p.CheckInterval = o.CheckInterval
	}
	if o.Fall != 0 {
		p.Fall = o.Fall
	}
	if o.Rise != 0 {
		p.Rise = o.Rise
	}
	return p
}

// IsZero reports whether the spec has no proxy.
func (p ProxySpec) IsZero() bool {
	return p.Type == "" && p.Config == "" && p.Binary == "" && p.CheckInterval == 0 && p.Fall == 0 && p.Rise == 0 && p.Read == nil
}

// HasRead reports whether the proxy has a read endpoint (Read, defaulted).
func (p ProxySpec) HasRead() bool { return p.Read != nil && *p.Read }

// UnmarshalYAML reads `proxy: haproxy` as well as the map; a check_interval, fall or
// rise written as 0 is kept (as ZeroGivenInterval, ZeroGivenCount) so that Validate
// refuses it instead of Defaults taking the default.
func (p *ProxySpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*p = ProxySpec{Type: n.Value}
		return nil
	}
	type plain ProxySpec
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; {
		case k == "check_interval" && v.CheckInterval == 0:
			v.CheckInterval = ZeroGivenInterval
		case k == "fall" && v.Fall == 0:
			v.Fall = ZeroGivenCount
		case k == "rise" && v.Rise == 0:
			v.Rise = ZeroGivenCount
		}
	}
	*p = ProxySpec(v)
	return nil
}

// ProxyDef is one kind of proxy as package topology knows it (data). Each registers from
// its own file (proxy_haproxy.go); package cluster registers the Program that runs it
// (ProxyDef.Program) from a file of its own. Adding a proxy is those two files.
type ProxyDef struct {
	// Type is what users write (proxy: TYPE).
	Type string
	// Summary is one line for help and docs.
	Summary string
	// Program is the cluster Program that runs it (an AuxNode's Program).
	Program string
	// Ports name the ports it listens on, in order from its member's port: the first is
	// the write endpoint, the second the read endpoint ("write", "read", "stats", ...).
	Ports []string
	// Untried says the proxy's configuration is generated and unit-tested but has not
	// run on its real binary here (a note in docs and dry runs); "" when it has.
	Untried string
	// NoChecks says why the proxy has no health checks habench sets ("" when its
	// configuration takes check_interval, fall and rise): a sweep's via value that changes
	// them is refused.
	NoChecks string
	// Hosts says habench runs it on the user's hosts too (provider hosts); else a spec
	// with it on hosts is refused.
	Hosts bool
	// Validate checks what only this proxy constrains (nil: nothing); a *FieldError.
	Validate func(s *Spec) error
}

var proxyDefs = map[string]*ProxyDef{}

// RegisterProxy adds a proxy. One without a type or a program, or a type registered
// twice, is refused and recorded in RegistrationErrors.
func RegisterProxy(d ProxyDef) {
	if _, dup := proxyDefs[d.Type]; dup || d.Type == "" || d.Program == "" || len(d.Ports) == 0 {
		kindErrs = append(kindErrs, fmt.Sprintf("proxy %q: registered twice, or without a type, a program or ports", d.Type))
		return
	}
	proxyDefs[d.Type] = &d
}

// ProxyOf returns the proxy called typ, or nil.
func ProxyOf(typ string) *ProxyDef { return proxyDefs[typ] }

// ProxyTypes returns the registered proxies' types, sorted.
func ProxyTypes() []string {
	var out []string
	for t := range proxyDefs {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// proxyAux is the spec's proxy as an aux member, or nil without one.
func (s Spec) proxyAux() []AuxNode {
	d := ProxyOf(s.Proxy.Type)
	if d == nil {
		return nil
	}
	return []AuxNode{{Name: ProxyName, Role: RoleProxy, Program: d.Program, Ports: len(d.Ports)}}
}

// proxyDefaults fills a proxy's zero fields (nothing without a proxy).
func (s *Spec) proxyDefaults() {
	p := &s.Proxy
	if p.Type == "" {
		return
	}
	if p.CheckInterval == 0 {
		p.CheckInterval = DefaultCheckInterval
	}
	if p.Fall == 0 {
		p.Fall = 3
	}
	if p.Rise == 0 {
		p.Rise = 2
	}
	if p.Read == nil {
		read := s.Nodes > 1
		p.Read = &read
	}
}

// validateProxy checks the proxy section (nil without one): a registered type, a check
// interval of at least MinCheckInterval, fall and rise of 1 to 100, a read endpoint only
// with 2 or more nodes, a one-line config path; then the proxy's own Validate.
func (s *Spec) validateProxy() error {
	p := s.Proxy
	if p.IsZero() {
		return nil
	}
	if s.Provider == ProviderExisting {
		return &FieldError{"proxy", p.Type, "not with provider existing yet: habench deploys a proxy only beside servers it deploys (a sandbox, or provider hosts)"}
	}
	d := ProxyOf(p.Type)
	if d == nil {
		return &FieldError{"proxy.type", p.Type, "want one of " + strings.Join(ProxyTypes(), ", ")}
	}
	if s.IsHosts() && !d.Hosts {
		var on []string
		for _, t := range ProxyTypes() {
			if ProxyOf(t).Hosts {
				on = append(on, t)
			}
		}
		return &FieldError{"proxy", p.Type, "not with provider hosts yet: habench runs " + p.Type + " on a sandbox only (on hosts: " + strings.Join(on, ", ") + ")"}
	}
	// In a spec every check is given (Defaults fills those not written): a zero is a 0.
	ck := p.Checks()
	for _, v := range []*int{&ck.Fall, &ck.Rise} {
		if *v == 0 {
			*v = ZeroGivenCount
		}
	}
	if ck.CheckInterval == 0 {
		ck.CheckInterval = ZeroGivenInterval
	}
	if err := ck.Validate("proxy"); err != nil {
		return err
	}
	if p.HasRead() && s.Nodes < 2 {
		return &FieldError{"proxy.read", true, fmt.Sprintf("a read endpoint needs a node besides the writer (the topology has %d)", s.Nodes)}
	}
	if strings.ContainsAny(p.Config+p.Binary, "\n\r\x00") {
		return &FieldError{"proxy.config", p.Config, "a path is one line"}
	}
	if slices.Contains(s.auxNames(), ProxyName) {
		return &FieldError{"proxy", p.Type, "the kind has a member called " + ProxyName + " already"}
	}
	if s.IsHosts() {
		if err := s.validateProxyOnHosts(d); err != nil {
			return err
		}
	}
	if d.Validate != nil {
		return d.Validate(s)
	}
	return nil
}

// auxNames are the names of the kind's own aux members (not the proxy).
func (s Spec) auxNames() []string {
	var out []string
	if f := KindOf(s.Kind).Aux; f != nil {
		for _, a := range f(s) {
			out = append(out, a.Name)
		}
	}
	return out
}

// validateProxyOnHosts checks a proxy on provider hosts: proxy.binary is an absolute path
// (on the proxy's host), a proxy in a site shares it with a member placed on a host
// (AuxHostOf), and its ports, consecutive from its slot's port, stay under 65536.
func (s *Spec) validateProxyOnHosts(d *ProxyDef) error {
	p := s.Proxy
	if p.Binary != "" && !strings.HasPrefix(p.Binary, "/") {
		return &FieldError{"proxy.binary", p.Binary, "on provider hosts, an absolute path on the proxy's host"}
	}
	if site := s.Sites.SiteOf(ProxyName); site != "" && len(s.Sites.Site(site).Nodes) == 1 {
		return &FieldError{"sites." + site, ProxyName, "on provider hosts the proxy goes on the host of a member of its site, and it is alone in " + site + ": list a node of that site with it"}
	}
	aux := s.AuxNodes()
	_, slot := s.AuxHostOf(len(aux) - 1)
	if last := s.BasePort + slot + len(d.Ports) - 1; last > 65535 {
		return &FieldError{"base_port", s.BasePort, fmt.Sprintf("the proxy listens on %d ports from %d on its host, past 65535", len(d.Ports), s.BasePort+slot)}
	}
	return nil
}

// AuxHostOf returns, on provider hosts, the host (an index in Hosts) and the slot on it
// of aux member j (0-based, AuxNodes order): member Nodes+j+1 of HostOf's order (the
// next host after the SQL nodes, wrapping round), except a proxy in a site with other
// members (sites:), which goes on the host of the first of them its site lists (so it
// reaches the servers as the application in that site does), in the next slot there.
// Pure; the slot of every member placed earlier on the host is below it.
func (s Spec) AuxHostOf(j int) (host, slot int) {
	aux := s.AuxNodes()
	if j < 0 || j >= len(aux) || aux[j].Role != RoleProxy || len(s.Hosts) == 0 {
		return s.HostOf(s.Nodes + j + 1)
	}
	site := s.Sites.Site(s.Sites.SiteOf(aux[j].Name))
	if site == nil {
		return s.HostOf(s.Nodes + j + 1)
	}
	// The hosts of the members placed before it, in MemberNames order.
	var hosts []int
	names := s.MemberNames()
	for i := 0; i < s.Nodes+j; i++ {
		if i < s.Nodes {
			hi, _ := s.HostOf(i + 1)
			hosts = append(hosts, hi)
		} else {
			hi, _ := s.AuxHostOf(i - s.Nodes)
			hosts = append(hosts, hi)
		}
	}
	for _, m := range site.Nodes {
		if i := slices.Index(names, m); i >= 0 && i < len(hosts) {
			host = hosts[i]
			for _, h := range hosts {
				if h == host {
					slot++
				}
			}
			return host, slot
		}
	}
	return s.HostOf(s.Nodes + j + 1)
}
