package topology

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Site is a named place of a topology (a datacenter, a zone) and the members it holds.
type Site struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
}

// Sites are a topology's sites in the order the user gave them. In YAML they are a
// mapping, `sites: {dc1: [n1, n2], dc2: [n3, n4], dc3: [arb]}`; in JSON a list of Site.
// Links between sites are given per site pair (netem groups: intra and inter), reports
// group nodes by site, and a partition can cut a whole site off.
type Sites []Site

var siteNameRE = nameRE

// UnmarshalYAML reads the mapping form, keeping its order. Errors name the site.
func (s *Sites) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: sites: want a mapping of site names to node lists, e.g. {dc1: [n1, n2], dc2: [n3]}", n.Line)
	}
	var out Sites
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var nodes []string
		if err := v.Decode(&nodes); err != nil {
			return fmt.Errorf("line %d: sites.%s: want a list of node names", v.Line, k.Value)
		}
		out = append(out, Site{Name: k.Value, Nodes: nodes})
	}
	*s = out
	return nil
}

// MarshalYAML writes the mapping form.
func (s Sites) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, site := range s {
		v := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, m := range site.Nodes {
			v.Content = append(v.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: m})
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: site.Name}, v)
	}
	return n, nil
}

// UnmarshalJSON accepts the list form (what MarshalJSON writes) and the mapping form.
func (s *Sites) UnmarshalJSON(b []byte) error {
	var list []Site
	if err := json.Unmarshal(b, &list); err == nil {
		*s = list
		return nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil || len(n.Content) == 0 {
		return fmt.Errorf("sites: want a list of {name, nodes} or a mapping")
	}
	return s.UnmarshalYAML(n.Content[0])
}

// SiteOf returns the site of member name ("" when it has none).
func (s Sites) SiteOf(name string) string {
	for _, site := range s {
		if slices.Contains(site.Nodes, name) {
			return site.Name
		}
	}
	return ""
}

// Site returns the site called name, or nil.
func (s Sites) Site(name string) *Site {
	for i := range s {
		if s[i].Name == name {
			return &s[i]
		}
	}
	return nil
}

// Names returns the site names in order.
func (s Sites) Names() []string {
	var out []string
	for _, site := range s {
		out = append(out, site.Name)
	}
	return out
}

// Groups is the sites in the netem groups form for one-way impairments within a site
// (intra) and between sites (inter): "dc1: [n1,n2], dc2: [n3]; intra 0.1ms, inter 5ms".
// An empty intra or inter leaves those links alone.
func (s Sites) Groups(intra, inter string) string {
	var gs, imps []string
	for _, site := range s {
		gs = append(gs, site.Name+": ["+strings.Join(site.Nodes, ",")+"]")
	}
	if intra != "" {
		imps = append(imps, "intra "+intra)
	}
	if inter != "" {
		imps = append(imps, "inter "+inter)
	}
	return strings.Join(gs, ", ") + "; " + strings.Join(imps, ", ")
}

// CutOff is the netem groups form that partitions site from every other member (links
// inside the site and among the others stay as they are).
func (s Sites) CutOff(site string) (string, error) {
	st := s.Site(site)
	if st == nil {
		return "", &FieldError{"site", site, "no such site (sites: " + strings.Join(s.Names(), ", ") + ")"}
	}
	var rest []string
	for _, o := range s {
		if o.Name != site {
			rest = append(rest, o.Nodes...)
		}
	}
	if len(rest) == 0 {
		return "", &FieldError{"site", site, "it is the only site: nothing to cut it off from"}
	}
	// The other members' group: "others", unless the site cut off is called that.
	others := "others"
	if site == others {
		others = "rest"
	}
	return site + ": [" + strings.Join(st.Nodes, ",") + "], " + others + ": [" + strings.Join(rest, ",") + "]; inter partition", nil
}

// writerAlias is what faults call the current writer (cluster.WriterAlias): not a site name.
const writerAlias = "writer"

// memberNamesForSites are the members sites refer to: n1..nN and the aux nodes of a
// sandbox; the dsns' nodes of an existing cluster (nodes: is optional there).
func (s *Spec) memberNamesForSites() []string {
	if s.Provider == ProviderExisting && s.Nodes == 0 {
		var out []string
		for i := range s.DSNs {
			out = append(out, NodeName(i+1))
		}
		return out
	}
	return s.MemberNames()
}

// validateSites checks that every member of the spec is in exactly one site, and that
// every site has a valid, unique name and at least one member. Nil without sites.
func (s *Spec) validateSites() error {
	if len(s.Sites) == 0 {
		return nil
	}
	if s.Provider == ProviderExisting && s.Cluster != "" {
		return &FieldError{"sites", strings.Join(s.Sites.Names(), ","), "a registered cluster already has its sites (habench register with sites: in the file); give sites with dsns"}
	}
	members := s.memberNamesForSites()
	seen := map[string]string{}
	names := map[string]bool{}
	for _, site := range s.Sites {
		if !siteNameRE.MatchString(site.Name) {
			return &FieldError{"sites", site.Name, "a site name is 1-10 lower-case letters and digits, starting with a letter"}
		}
		// fault partition NAME takes a site or a member: one name, one meaning.
		if slices.Contains(members, site.Name) || site.Name == writerAlias {
			return &FieldError{"sites", site.Name, "a site name must differ from the members' names and from " + writerAlias + " (faults take either)"}
		}
		if names[site.Name] {
			return &FieldError{"sites", site.Name, "site given twice"}
		}
		names[site.Name] = true
		if len(site.Nodes) == 0 {
			return &FieldError{"sites." + site.Name, "[]", "a site needs at least one node"}
		}
		for _, m := range site.Nodes {
			if !slices.Contains(members, m) {
				return &FieldError{"sites." + site.Name, m, "no such node (the topology's nodes: " + strings.Join(members, ", ") + ")"}
			}
			if other, dup := seen[m]; dup {
				return &FieldError{"sites." + site.Name, m, "already in site " + other}
			}
			seen[m] = site.Name
		}
	}
	for _, m := range members {
		if seen[m] == "" {
			return &FieldError{"sites", m, "node in no site: give every node a site, or none"}
		}
	}
	return nil
}
