package topology

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// KindDef is one topology kind as package topology knows it: everything about a kind that
// is data (defaults, validation, node counts, the bootstrap plan, which samplers and
// writers it has, estimates). Each kind registers its KindDef from its own file
// (single.go, async.go, ...); package cluster holds the matching behaviour (KindOps).
// Adding a kind is one file here and one in package cluster.
//
// Nil funcs and zero fields take the defaults documented on each field; a kind with a
// Base takes its base's Plan, samplers, writer and member words, conflict errors and
// estimates unless it sets its own (see resolved).
type KindDef struct {
	// Kind is the name users write (kind: NAME).
	Kind Kind
	// Base is the kind this one extends ("" for none): code that asks Spec.Is(Base)
	// treats this kind as its base (a Galera cluster with an arbitrator is a galera; a
	// group with a DR replica is a group), and the base's spec section (group:, galera:)
	// belongs to it too.
	Base Kind
	// Order places the kind in listings and messages (lower first).
	Order int
	// Summary is one line for help and docs: "one source, N-1 asynchronous replicas".
	Summary string
	// DefaultNodes is the node count of a spec that gives none (3 when zero).
	DefaultNodes int
	// Defaults fills the kind's own zero fields after the common defaults and its base's
	// Defaults (nil: none).
	Defaults func(s *Spec)
	// Precheck checks, before the common checks (the sandbox flavors, the node range),
	// what the kind's own section decides first: a group's flavors and member count, in
	// its own words. It returns a *FieldError (nil func: nothing). A kind with a Base
	// calls its base's Precheck itself where it wants its checks.
	Precheck func(s *Spec) error
	// Flavors are the flavors a sandbox of this kind accepts besides those whose
	// FlavorDef accepts the kind (AllKinds, SandboxKinds; group: percona); a kind
	// extending another accepts its base's too.
	Flavors []Flavor
	// Validate checks what only this kind constrains (node counts, its own section) after
	// the common checks (flavor, node range 1 to MaxNodes); it returns a *FieldError (nil
	// func: nothing more). A kind with a Base calls its base's Validate itself where it
	// wants its checks.
	Validate func(s *Spec) error
	// Plan returns the bootstrap plan (required, unless the base's serves).
	Plan func(spec Spec, caps Capabilities, addr Addr) (Plan, error)
	// Samplers names the per-second samplers of the kind, in sampling order (see package
	// sampler's Register); nil: heartbeat and host.
	Samplers []string
	// AutoWriter says the workers should follow the writer by default (a single-primary
	// group's primary can change under a run); nil: they stay where they started.
	AutoWriter func(spec Spec) bool
	// NoSingleWriter says why there is no single writer to follow ("" or nil: there is).
	NoSingleWriter func(spec Spec) string
	// MemberWord is what the kind calls a node that is not the writer ("replica" when
	// empty; "member" for a group, "node" for Galera).
	MemberWord string
	// ConflictErrors are the error codes that several writers of this kind cause by
	// design (certification failures, conflicts at commit), with a phrase for the note
	// that says they are retried: nil when writes on several nodes are not expected.
	ConflictErrors func(spec Spec) (codes []uint16, what string)
	// Promotable: a replica can be promoted to source (habench fault promote).
	Promotable bool
	// Deploy estimates a deploy: base + perNode x nodes (nil: the flavor's replication
	// defaults, see EstimateDeploy in package experiment).
	Deploy func(spec Spec) (base, perNode time.Duration)
	// RestartPerNode is a restart of one node, for estimates (0: the flavor's default).
	RestartPerNode time.Duration
	// Keys are the keys this kind adds to its base's section ("galera.arbitrator"),
	// kept in that section's Extra and read by the kind itself.
	Keys []string
	// Claim says a spec written as its base kind is this kind (kind: galera with
	// galera: {arbitrator: true} is a galera-arbitrator): Defaults then sets Kind.
	Claim func(s *Spec) bool
	// Aux lists the members of spec that are not SQL servers (a Galera arbitrator), after
	// the spec's nodes; nil: none.
	Aux func(spec Spec) []AuxNode
	// Existing says habench recognises this kind on the servers of an existing cluster
	// (cluster.InferTopology), which makes it a valid kind hint there (ExistingKinds).
	Existing bool
}

// AuxNode is a member of a topology that is not a SQL server: its name (unique among the
// topology's members, not nN), role, and the program that runs it (registered in
// package cluster by the kind's file).
type AuxNode struct {
	Name    string
	Role    Role
	Program string
	// Ports is how many ports the member listens on, from its node's Port up (a proxy's
	// endpoints); 0: a port only where members share an address (a Galera arbitrator's
	// offsets on loopback), none in a namespace of its own.
	Ports int
}

// AuxNodes returns the spec's aux members: the kind's (KindDef.Aux), then its proxy's.
func (s Spec) AuxNodes() []AuxNode {
	var out []AuxNode
	if f := KindOf(s.Kind).Aux; f != nil {
		out = f(s)
	}
	return append(out, s.proxyAux()...)
}

// MemberNames returns the names of every member of the spec: n1..nN, then its aux nodes.
func (s Spec) MemberNames() []string {
	var out []string
	for i := 1; i <= s.Nodes; i++ {
		out = append(out, NodeName(i))
	}
	for _, a := range s.AuxNodes() {
		out = append(out, a.Name)
	}
	return out
}

var kindDefs = map[Kind]*KindDef{}

// kindErrs are registrations RegisterKind refused (RegistrationErrors).
var kindErrs []string

// RegisterKind adds a kind. Kinds register from init functions in their own files. A
// kind without a name or a Plan, or a name registered twice, is refused and recorded in
// RegistrationErrors (a unit test keeps that empty).
func RegisterKind(d KindDef) {
	if d.Kind == "" || (d.Plan == nil && d.Base == "") {
		kindErrs = append(kindErrs, fmt.Sprintf("kind %q: needs a name and a Plan (or a Base to take it from)", d.Kind))
		return
	}
	if _, dup := kindDefs[d.Kind]; dup {
		kindErrs = append(kindErrs, fmt.Sprintf("kind %q: registered twice", d.Kind))
		return
	}
	kindDefs[d.Kind] = &d
}

// resolved is d as the rest of habench sees it: the fields a kind describes the same way
// as its base when it does not say otherwise (Plan, Samplers, AutoWriter, NoSingleWriter,
// MemberWord, ConflictErrors, Deploy, RestartPerNode, DefaultNodes) taken from its base
// (transitively) when unset, then DefaultNodes 3 and MemberWord "replica" when still unset.
// Defaults, Precheck and Validate are not inherited: a base's Defaults run first anyway
// (Spec.Defaults), and a kind calls its base's checks itself where it wants them.
func resolved(d *KindDef) *KindDef {
	r := *d
	for b, i := d.Base, 0; b != "" && i < 8; i++ {
		bd, ok := kindDefs[b]
		if !ok {
			break
		}
		if r.Plan == nil {
			r.Plan = bd.Plan
		}
		if r.Samplers == nil {
			r.Samplers = bd.Samplers
		}
		if r.AutoWriter == nil {
			r.AutoWriter = bd.AutoWriter
		}
		if r.NoSingleWriter == nil {
			r.NoSingleWriter = bd.NoSingleWriter
		}
		if r.MemberWord == "" {
			r.MemberWord = bd.MemberWord
		}
		if r.ConflictErrors == nil {
			r.ConflictErrors = bd.ConflictErrors
		}
		if r.Deploy == nil {
			r.Deploy = bd.Deploy
		}
		if r.RestartPerNode == 0 {
			r.RestartPerNode = bd.RestartPerNode
		}
		if r.DefaultNodes == 0 {
			r.DefaultNodes = bd.DefaultNodes
		}
		b = bd.Base
	}
	if r.DefaultNodes == 0 {
		r.DefaultNodes = 3
	}
	if r.MemberWord == "" {
		r.MemberWord = "replica"
	}
	return &r
}

// RegistrationErrors lists the kind registrations that were refused.
func RegistrationErrors() []string { return slices.Clone(kindErrs) }

// LookupKind returns the registered definition of k, or nil and a *FieldError on
// "kind" listing the known kinds.
func LookupKind(k Kind) (*KindDef, error) {
	if d, ok := kindDefs[k]; ok {
		return resolved(d), nil
	}
	return nil, &FieldError{"kind", k, "want one of " + kindList()}
}

// KindOf returns k's definition, or a definition with the defaults for an unknown kind
// (an existing cluster's state from another habench version): never nil.
func KindOf(k Kind) *KindDef {
	if d, ok := kindDefs[k]; ok {
		return resolved(d)
	}
	return &KindDef{Kind: k, MemberWord: "replica", DefaultNodes: 3}
}

// ExistingKinds returns the kinds habench recognises on an existing cluster
// (KindDef.Existing), in Kinds order.
func ExistingKinds() []Kind {
	var out []Kind
	for _, k := range Kinds() {
		if kindDefs[k].Existing {
			out = append(out, k)
		}
	}
	return out
}

// Kinds returns the registered kinds in their listing order.
func Kinds() []Kind {
	ds := make([]*KindDef, 0, len(kindDefs))
	for _, d := range kindDefs {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *KindDef) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(string(a.Kind), string(b.Kind))
	})
	out := make([]Kind, len(ds))
	for i, d := range ds {
		out[i] = d.Kind
	}
	return out
}

// Is reports whether k is base or extends it (KindDef.Base, transitively).
func (k Kind) Is(base Kind) bool {
	for i := 0; k != "" && i < 8; i++ {
		if k == base {
			return true
		}
		d, ok := kindDefs[k]
		if !ok {
			return false
		}
		k = d.Base
	}
	return false
}

// Is reports whether the spec's kind is base or extends it.
func (s Spec) Is(base Kind) bool { return s.Kind.Is(base) }

// kindList is the registered kinds for messages ("single, async, semisync, group, ...").
func kindList() string {
	var k []string
	for _, x := range Kinds() {
		k = append(k, string(x))
	}
	return strings.Join(k, ", ")
}

// claim returns the registered kind that claims s (KindDef.Claim among the kinds whose
// Base is s.Kind), or s.Kind.
func claim(s *Spec) Kind {
	for _, k := range Kinds() {
		if d := kindDefs[k]; d.Base == s.Kind && d.Claim != nil && d.Claim(s) {
			return k
		}
	}
	return s.Kind
}

// extraKeys lists, for messages, the keys that kinds extending base add under prefix:
// ", arbitrator".
func extraKeys(base Kind, prefix string) string {
	var out []string
	for _, k := range Kinds() {
		if d := kindDefs[k]; k.Is(base) {
			for _, key := range d.Keys {
				if strings.HasPrefix(key, prefix) {
					out = append(out, strings.TrimPrefix(key, prefix))
				}
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ", " + strings.Join(out, ", ")
}

// nodesAtLeast is a Validate helper: a *FieldError on "nodes" when s has fewer than min.
func nodesAtLeast(s *Spec, min int, why string) error {
	if s.Nodes < min {
		return &FieldError{"nodes", s.Nodes, fmt.Sprintf("%s needs %s", s.Kind, why)}
	}
	return nil
}
