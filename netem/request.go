package netem

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Request is how a user asks for impairments, on the command line (`habench netem apply
// --all/--groups/--node/--link/--partition`) and in scenario files (`links:`). Every value
// is ONE-WAY, in ParseImpairment's form ("0.6ms", "delay 5ms jitter 1ms loss 0.1%"). Build
// applies the fields from the general to the specific, each overriding the previous link
// by link: All, Groups, Node, Link, Partition.
type Request struct {
	// All is the impairment of every directed link.
	All string `yaml:"all,omitempty" json:"all,omitempty"`
	// Groups is the group form "dc1: [n1,n2], dc2: [n3]; intra 0.1ms, inter 5ms" (ParseGroups).
	Groups string `yaml:"groups,omitempty" json:"groups,omitempty"`
	// Node maps a node to the impairment of every link leaving it (its egress).
	Node map[string]string `yaml:"node,omitempty" json:"node,omitempty"`
	// Away maps a node to the impairment of every link between it and each other node,
	// both directions: "n3 0.6 ms away from the others" (the links among the others are
	// not touched), the shortcut for Node plus a Link to it from each other node.
	Away map[string]string `yaml:"away,omitempty" json:"away,omitempty"`
	// Link maps a directed link "n1->n2" to its impairment (n2->n1 is not touched).
	Link map[string]string `yaml:"link,omitempty" json:"link,omitempty"`
	// Partition cuts each listed node off from every other node, both directions.
	Partition []string `yaml:"partition,omitempty" json:"partition,omitempty"`
	// Intra and Inter are the impairments within each site and between sites of the
	// topology's sites (topology sites:), applied like Groups; Pair maps a site pair
	// "dc1-dc3" to the impairment of the links between those two sites (both ways),
	// after Inter. They need WithSites before Build.
	Intra string            `yaml:"intra,omitempty" json:"intra,omitempty"`
	Inter string            `yaml:"inter,omitempty" json:"inter,omitempty"`
	Pair  map[string]string `yaml:"pair,omitempty" json:"pair,omitempty"`

	// sites are the topology's sites (WithSites), for Intra, Inter and Pair.
	sites []Site
}

// Site is a named group of nodes (a topology's site) for Request.WithSites.
type Site struct {
	Name  string
	Nodes []string
}

// WithSites returns the request with the topology's sites, which Intra, Inter and Pair
// refer to.
func (r Request) WithSites(sites []Site) Request {
	r.sites = sites
	return r
}

// bySite reports whether the request uses the topology's sites.
func (r Request) bySite() bool { return r.Intra != "" || r.Inter != "" || len(r.Pair) > 0 }

// RequestError is a Request field that cannot be built: Field is the request's field as
// the user wrote it ("all", "node.n1", "link.n1->n2", "partition"), Value its value.
type RequestError struct {
	Field, Value string
	Err          error
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// IsZero reports whether the request asks for nothing.
func (r Request) IsZero() bool {
	return r.All == "" && r.Groups == "" && len(r.Node) == 0 && len(r.Away) == 0 && len(r.Link) == 0 && len(r.Partition) == 0 && !r.bySite()
}

// UnmarshalYAML accepts a plain string as short for `all:` (the form scenario files had
// first: `links: 0.6ms`) or the mapping with the fields above; unknown keys are errors.
func (r *Request) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*r = Request{All: s}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: links: want an impairment (\"0.6ms\") or a mapping with all, groups, node, away, link, partition, intra, inter, pair", n.Line)
	}
	type plain Request
	var p plain
	known := map[string]bool{"all": true, "groups": true, "node": true, "away": true, "link": true, "partition": true, "intra": true, "inter": true, "pair": true}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !known[k] {
			return fmt.Errorf("line %d: links: unknown key %q (want all, groups, node, away, link, partition, intra, inter, pair)", n.Content[i].Line, k)
		}
	}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = Request(p)
	return nil
}

// Build turns the request into a Spec over nodes, applying its fields in this order, each
// overriding the previous link by link: all, groups, intra/inter/pair, node, away, link,
// partition. Errors (*RequestError) name the field and value: an unparsable or empty
// impairment, an unknown node, a malformed link "A->B",
// a node in two groups or in none, a node partitioned twice, a request that impairs no
// link at all.
func (r Request) Build(nodes []string) (*Spec, error) {
	s, err := NewSpec(nodes)
	if err != nil {
		return nil, err
	}
	if r.All != "" {
		imp, err := ParseImpairment(r.All)
		if err != nil {
			return nil, &RequestError{"all", r.All, err}
		}
		for _, n := range nodes {
			if err := s.SetNode(n, imp); err != nil {
				return nil, &RequestError{"all", r.All, err}
			}
		}
	}
	if r.Groups != "" {
		if err := s.ParseGroups(r.Groups); err != nil {
			return nil, &RequestError{"groups", r.Groups, err}
		}
	}
	if err := r.buildSites(s); err != nil {
		return nil, err
	}
	for _, n := range slices.Sorted(maps.Keys(r.Node)) {
		if strings.TrimSpace(r.Node[n]) == "" {
			return nil, &RequestError{"node." + n, r.Node[n], fmt.Errorf("empty impairment")}
		}
		imp, err := ParseImpairment(r.Node[n])
		if err == nil {
			err = s.SetNode(n, imp)
		}
		if err != nil {
			return nil, &RequestError{"node." + n, r.Node[n], err}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(r.Away)) {
		if strings.TrimSpace(r.Away[n]) == "" {
			return nil, &RequestError{"away." + n, r.Away[n], fmt.Errorf("empty impairment")}
		}
		imp, err := ParseImpairment(r.Away[n])
		if err == nil {
			err = s.SetAway(n, imp)
		}
		if err != nil {
			return nil, &RequestError{"away." + n, r.Away[n], err}
		}
	}
	for _, l := range slices.Sorted(maps.Keys(r.Link)) {
		from, to, ok := strings.Cut(l, "->")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return nil, &RequestError{"link", l, fmt.Errorf("want FROM->TO, e.g. n1->n2")}
		}
		if strings.TrimSpace(r.Link[l]) == "" {
			return nil, &RequestError{"link." + l, r.Link[l], fmt.Errorf("empty impairment")}
		}
		imp, err := ParseImpairment(r.Link[l])
		if err == nil {
			err = s.SetLink(from, to, imp)
		}
		if err != nil {
			return nil, &RequestError{"link." + l, r.Link[l], err}
		}
	}
	for i, n := range r.Partition {
		if err := s.known(n); err != nil {
			return nil, &RequestError{"partition", n, err}
		}
		if slices.Contains(r.Partition[:i], n) {
			return nil, &RequestError{"partition", n, fmt.Errorf("listed twice")}
		}
		for _, o := range nodes {
			if o != n {
				s.set(Link{n, o}, Impairment{Partition: true})
				s.set(Link{o, n}, Impairment{Partition: true})
			}
		}
	}
	if len(s.Links) == 0 {
		return nil, &RequestError{"links", r.String(), fmt.Errorf("impairs no link (every value is zero): to remove impairments, clear them")}
	}
	return s, nil
}

// String renders the request in the command line's form, fields in Build's order:
// "--all 0.6ms --node n1=5ms --away n3=0.6ms --link n1->n2=partition --partition n3".
func (r Request) String() string {
	var parts []string
	q := func(s string) string {
		if strings.ContainsAny(s, " ;,[]") {
			return fmt.Sprintf("%q", s)
		}
		return s
	}
	if r.All != "" {
		parts = append(parts, "--all "+q(r.All))
	}
	if r.Groups != "" {
		parts = append(parts, "--groups "+q(r.Groups))
	}
	for _, n := range slices.Sorted(maps.Keys(r.Node)) {
		parts = append(parts, "--node "+q(n+"="+r.Node[n]))
	}
	for _, n := range slices.Sorted(maps.Keys(r.Away)) {
		parts = append(parts, "--away "+q(n+"="+r.Away[n]))
	}
	for _, l := range slices.Sorted(maps.Keys(r.Link)) {
		parts = append(parts, "--link "+q(l+"="+r.Link[l]))
	}
	for _, n := range r.Partition {
		parts = append(parts, "--partition "+n)
	}
	if r.Intra != "" {
		parts = append(parts, "--intra "+q(r.Intra))
	}
	if r.Inter != "" {
		parts = append(parts, "--inter "+q(r.Inter))
	}
	for _, p := range slices.Sorted(maps.Keys(r.Pair)) {
		parts = append(parts, "--pair "+q(p+"="+r.Pair[p]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Partitioned reports whether the spec partitions the pair a, b in either direction.
func (s *Spec) Partitioned(a, b string) bool {
	return s != nil && (s.Get(a, b).Partition || s.Get(b, a).Partition)
}

// Cut reports whether no packet gets through between a and b in one direction or the
// other: a partition or 100% loss. A handshake needs both directions.
func (s *Spec) Cut(a, b string) bool {
	return s.Partitioned(a, b) || (s != nil && (s.Get(a, b).Loss >= 1 || s.Get(b, a).Loss >= 1))
}

// Lossy reports whether the pair a, b loses some packets (not all) in either direction.
func (s *Spec) Lossy(a, b string) bool {
	return s != nil && !s.Cut(a, b) && (s.Get(a, b).Loss > 0 || s.Get(b, a).Loss > 0)
}

// Describe lists the spec's impaired links, one "n1->n2: delay 600us" per entry, sorted;
// "none" when every link is perfect.
func (s *Spec) Describe() []string {
	if s == nil || len(s.Links) == 0 {
		return []string{"none"}
	}
	var out []string
	for l, imp := range s.Links {
		out = append(out, l.String()+": "+imp.String())
	}
	sort.Strings(out)
	return out
}

// buildSites applies Intra, Inter and Pair over the request's sites. Errors
// (*RequestError): no sites, an unparsable impairment, a pair that is not "A-B" of two
// different sites.
func (r Request) buildSites(s *Spec) error {
	if !r.bySite() {
		return nil
	}
	field, val := "intra", r.Intra
	if val == "" {
		field, val = "inter", r.Inter
	}
	for _, p := range slices.Sorted(maps.Keys(r.Pair)) {
		if err := r.checkPair(p, s.Nodes); err != nil {
			return err
		}
	}
	if len(r.sites) == 0 {
		if len(r.Pair) > 0 && val == "" {
			field, val = "pair", fmt.Sprint(r.Pair)
		}
		return &RequestError{field, val, fmt.Errorf("the topology has no sites: give it sites: {dc1: [n1, n2], dc2: [n3]}")}
	}
	site := map[string]string{}
	for _, st := range r.sites {
		for _, n := range st.Nodes {
			site[n] = st.Name
		}
	}
	parse := func(f, v string) (Impairment, error) {
		imp, err := ParseImpairment(v)
		if err != nil {
			return imp, &RequestError{f, v, err}
		}
		return imp, nil
	}
	var intra, inter Impairment
	var err error
	if r.Intra != "" {
		if intra, err = parse("intra", r.Intra); err != nil {
			return err
		}
	}
	if r.Inter != "" {
		if inter, err = parse("inter", r.Inter); err != nil {
			return err
		}
	}
	for _, a := range s.Nodes {
		for _, b := range s.Nodes {
			if a == b || site[a] == "" || site[b] == "" {
				continue
			}
			switch {
			case site[a] == site[b] && r.Intra != "":
				s.set(Link{a, b}, intra)
			case site[a] != site[b] && r.Inter != "":
				s.set(Link{a, b}, inter)
			}
		}
	}
	pairs := map[string]string{} // "dc1-dc2" for dc2-dc1 too: the pair as given first
	for _, p := range slices.Sorted(maps.Keys(r.Pair)) {
		x, y, _ := strings.Cut(p, "-")
		key := min(x, y) + "-" + max(x, y)
		if other, dup := pairs[key]; dup {
			return &RequestError{"pair", p, fmt.Errorf("the same site pair as %s, given twice (a pair is both ways)", other)}
		}
		pairs[key] = p
		imp, err := parse("pair."+p, r.Pair[p])
		if err != nil {
			return err
		}
		for _, a := range s.Nodes {
			for _, b := range s.Nodes {
				if (site[a] == x && site[b] == y) || (site[a] == y && site[b] == x) {
					s.set(Link{a, b}, imp)
				}
			}
		}
	}
	return nil
}

// checkPair checks a pair "A-B" against the sites and nodes: errors (*RequestError, field
// pair) name the side that is wrong: a node the topology lacks ("the topology has no node
// n9 (it has n1, n2, n3)"), a site it lacks, a node given for a site, the same site twice.
func (r Request) checkPair(p string, nodes []string) error {
	bad := func(format string, a ...any) error { return &RequestError{"pair", p, fmt.Errorf(format, a...)} }
	x, y, ok := strings.Cut(p, "-")
	if !ok || x == "" || y == "" {
		return bad("want SITE-SITE of two of the topology's sites (%s)", siteNames(r.sites))
	}
	if x == y {
		return bad("both sides are %s: want two different sites", x)
	}
	isSite := func(n string) bool { return slices.ContainsFunc(r.sites, func(st Site) bool { return st.Name == n }) }
	// What the topology lacks first (n1-n9 names n9), then a node given for a site.
	for _, n := range []string{x, y} {
		switch {
		case isSite(n) || slices.Contains(nodes, n):
		case nodeNameRE.MatchString(n):
			return bad("the topology has no node %s (it has %s)", n, strings.Join(nodes, ", "))
		case len(r.sites) == 0:
			return bad("the topology has no site %s: it has no sites (give it sites: {dc1: [n1, n2], dc2: [n3]})", n)
		default:
			return bad("the topology has no site %s (it has %s)", n, siteNames(r.sites))
		}
	}
	for _, n := range []string{x, y} {
		if !isSite(n) {
			return bad("%s is a node, not a site: a pair is SITE-SITE of the topology's sites (%s); one node's link is link: {%s->NODE: ...}", n, siteNames(r.sites), n)
		}
	}
	return nil
}

// nodeNameRE is a sandbox node's name (n1, n2, ...).
var nodeNameRE = regexp.MustCompile(`^n[1-9][0-9]*$`)

func siteNames(sites []Site) string {
	if len(sites) == 0 {
		return "none"
	}
	var out []string
	for _, s := range sites {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}
