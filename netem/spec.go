package netem

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Distributions of the per-packet jitter.
const (
	DistUniform = "uniform" // delay uniform in [Delay-Jitter, Delay+Jitter] (the default, and netem's without a table)
	DistNormal  = "normal"  // delay normal with mean Delay and standard deviation Jitter, clipped at 0
)

// MaxDelay bounds a one-way delay or jitter: beyond it, handshakes and replication time
// out and nothing sensible is measured.
const MaxDelay = 10 * time.Second

// Impairment is what happens to packets on one directed link (A->B). All values are
// ONE-WAY: a round trip A->B->A costs Delay(A->B) + Delay(B->A). The zero value is a
// perfect link.
type Impairment struct {
	// Delay is the one-way latency added to every packet; microsecond resolution.
	Delay time.Duration
	// Jitter is the spread of the delay (half-width for uniform, standard deviation for
	// normal); 0 means every packet gets exactly Delay.
	Jitter time.Duration
	// Distribution of the jitter: "" (= uniform), "uniform" or "normal".
	Distribution string
	// Loss is the probability, in [0,1], that a packet is dropped.
	Loss float64
	// Rate limits the link to this many bytes per second; 0 means unlimited.
	Rate uint64
	// Partition drops every packet (full loss), whatever the other fields say.
	Partition bool
}

// IsZero reports whether imp leaves packets untouched.
func (imp Impairment) IsZero() bool { return imp == Impairment{} }

// Validate checks the ranges; the error names the field and the value.
func (imp Impairment) Validate() error {
	var errs []error
	if imp.Delay < 0 {
		errs = append(errs, fmt.Errorf("delay %v: must not be negative", imp.Delay))
	}
	if imp.Delay > MaxDelay {
		errs = append(errs, fmt.Errorf("delay %v: more than %v one-way is not a network", imp.Delay, MaxDelay))
	}
	if imp.Jitter < 0 {
		errs = append(errs, fmt.Errorf("jitter %v: must not be negative", imp.Jitter))
	}
	if imp.Jitter > MaxDelay {
		errs = append(errs, fmt.Errorf("jitter %v: more than %v is not a network", imp.Jitter, MaxDelay))
	}
	if imp.Jitter > 0 && imp.Delay == 0 {
		errs = append(errs, fmt.Errorf("jitter %v: needs a delay to vary around (as in tc: delay 5ms jitter 1ms)", imp.Jitter))
	}
	if imp.Distribution != "" && imp.Jitter == 0 {
		errs = append(errs, fmt.Errorf("distribution %q: needs a jitter", imp.Distribution))
	}

	switch imp.Distribution {
	case "", DistUniform, DistNormal:
	default:
		errs = append(errs, fmt.Errorf("distribution %q: want %q or %q", imp.Distribution, DistUniform, DistNormal))
	}
	if math.IsNaN(imp.Loss) || imp.Loss < 0 || imp.Loss > 1 {
		errs = append(errs, fmt.Errorf("loss %v: want a fraction in [0,1]", imp.Loss))
	}
	return errors.Join(errs...)
}

// String renders imp in the form ParseImpairment reads ("delay 600us jitter 100us loss 1%").
func (imp Impairment) String() string {
	if imp.Partition {
		return "partition"
	}
	var parts []string
	if imp.Delay != 0 {
		parts = append(parts, "delay "+FormatDuration(imp.Delay))
	}
	if imp.Jitter != 0 {
		parts = append(parts, "jitter "+FormatDuration(imp.Jitter))
	}
	if imp.Distribution != "" {
		parts = append(parts, "distribution "+imp.Distribution)
	}
	if imp.Loss != 0 {
		parts = append(parts, "loss "+strconv.FormatFloat(imp.Loss*100, 'g', -1, 64)+"%")
	}
	if imp.Rate != 0 {
		parts = append(parts, "rate "+strconv.FormatUint(imp.Rate, 10)+"bps")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// FormatDuration renders d in ParseDuration's form with ASCII units: "600us", "1.5ms",
// "5ms", "2s".
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "us"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
	default:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
}

// ParseDuration reads a delay or jitter with microsecond resolution: "600us", "600µs",
// "0.6ms", "5ms", "1s", and "0". A bare number other than 0 is refused (its unit would be
// a guess); so are negative values and anything finer than a microsecond.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q: needs a unit (us, ms or s)", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want e.g. 600us, 0.6ms or 5ms", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q: must not be negative", s)
	}
	if d%time.Microsecond != 0 {
		return 0, fmt.Errorf("duration %q: resolution is one microsecond", s)
	}
	return d, nil
}

// ParseLoss reads a loss probability as a percent ("1%", "0.5%") or a fraction below 1
// ("0.01"), returning the fraction in [0,1]. A bare number of 1 or more is refused: tc
// reads "loss 1" as 1%, a fraction of 1 would be 100%.
func ParseLoss(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("loss %q: want a percent (1%%) or a fraction (0.01)", s)
	}
	if pct {
		v /= 100
	} else if v >= 1 {
		// tc reads a bare "loss 1" as 1%; a fraction of 1 would be 100%: refuse the guess.
		return 0, fmt.Errorf("loss %q: ambiguous, write a percent (%s%%) or a fraction below 1", s, s)
	}
	if v < 0 || v > 1 {
		return 0, fmt.Errorf("loss %q: must lie between 0 and 100%%", s)
	}
	return v, nil
}

// rateUnits follows tc(8): "bit" units are bits per second, "bps" units bytes per second;
// k/m/g are powers of 1000, ki/mi/gi of 1024.
var rateUnits = []struct {
	suffix string
	bytes  float64 // bytes per second per unit
}{
	{"kibit", 1024.0 / 8}, {"mibit", 1024.0 * 1024 / 8}, {"gibit", 1024.0 * 1024 * 1024 / 8},
	{"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8}, {"bit", 1.0 / 8},
	{"kibps", 1024}, {"mibps", 1024 * 1024}, {"gibps", 1024 * 1024 * 1024},
	{"kbps", 1e3}, {"mbps", 1e6}, {"gbps", 1e9}, {"bps", 1},
}

// ParseRate reads a rate limit in tc's units and returns bytes per second: "10mbit"
// (10 000 000 bits/s = 1 250 000 B/s), "1gbit", "500kbit", "2mbps" (bytes), or a bare
// number of bytes per second. 0 is refused (leave the rate out for unlimited).
func ParseRate(s string) (uint64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	num, mult := s, 1.0
	for _, u := range rateUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.bytes
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("rate %q: want e.g. 10mbit, 500kbit or 2mbps", s)
	}
	b := math.Round(v * mult)
	if b > math.MaxUint64/2 {
		return 0, fmt.Errorf("rate %q: too large", s)
	}
	if v == 0 {
		return 0, fmt.Errorf("rate %q: a rate of 0 would stop the link (leave rate out for unlimited, or use partition)", s)
	}
	if b < 1 {
		return 0, fmt.Errorf("rate %q: below one byte per second", s)
	}
	return uint64(b), nil
}

// ParseImpairment reads space-separated "key value" pairs: "delay 5ms jitter 1ms
// distribution normal loss 1% rate 10mbit", or the single word "partition" (also allowed
// among the pairs), or "none". A bare duration ("0.6ms") is short for "delay 0.6ms".
// Delay and jitter are one-way. The result is validated.
func ParseImpairment(s string) (Impairment, error) {
	var imp Impairment
	f := strings.Fields(s)
	if len(f) == 1 && f[0] != "partition" && f[0] != "none" {
		d, err := ParseDuration(f[0])
		if err != nil {
			return imp, fmt.Errorf("impairment %q: %w", s, err)
		}
		imp.Delay = d
		return imp, nil
	}
	seen := map[string]bool{}
	for i := 0; i < len(f); i++ {
		key := f[i]
		if key == "latency" {
			key = "delay"
		} else if key == "dist" {
			key = "distribution"
		}
		if seen[key] {
			return imp, fmt.Errorf("impairment %q: %s given twice", s, key)
		}
		seen[key] = true
		if key == "partition" {
			imp.Partition = true
			continue
		}
		if key == "none" {
			if len(f) > 1 {
				return imp, fmt.Errorf("impairment %q: none takes nothing else", s)
			}
			continue
		}
		if i+1 >= len(f) {
			return imp, fmt.Errorf("impairment %q: %s needs a value", s, key)
		}
		val := f[i+1]
		i++
		var err error
		switch key {
		case "delay":
			imp.Delay, err = ParseDuration(val)
		case "jitter":
			imp.Jitter, err = ParseDuration(val)
		case "distribution":
			imp.Distribution = val
		case "loss":
			imp.Loss, err = ParseLoss(val)
		case "rate":
			imp.Rate, err = ParseRate(val)
		default:
			err = fmt.Errorf("unknown key %q (want delay, jitter, distribution, loss, rate or partition)", key)
		}
		if err != nil {
			return imp, fmt.Errorf("impairment %q: %w", s, err)
		}
	}
	if imp.Partition && len(f) > 1 {
		return imp, fmt.Errorf("impairment %q: partition drops every packet, it takes no delay, jitter, loss or rate", s)
	}
	if err := imp.Validate(); err != nil {
		return imp, fmt.Errorf("impairment %q: %w", s, err)
	}
	return imp, nil
}

// Link is one direction between two nodes, named as in the sandbox ("n1", "n2").
type Link struct{ From, To string }

func (l Link) String() string { return l.From + "->" + l.To }

// Spec holds the impairment of every directed link between a fixed set of nodes. Links
// not in Links are perfect. Later Set* calls override earlier ones link by link, so a
// group-wide setting can be refined per node or per link.
type Spec struct {
	Nodes []string
	Links map[Link]Impairment
}

// NewSpec returns a Spec without impairments for the named nodes; names must be distinct
// and non-empty.
func NewSpec(nodes []string) (*Spec, error) {
	seen := map[string]bool{}
	for _, n := range nodes {
		if n == "" || strings.ContainsAny(n, " ,:;[]") {
			return nil, fmt.Errorf("node name %q: must be non-empty without spaces or , : ; [ ]", n)
		}
		if seen[n] {
			return nil, fmt.Errorf("node name %q: listed twice", n)
		}
		seen[n] = true
	}
	return &Spec{Nodes: slices.Clone(nodes), Links: map[Link]Impairment{}}, nil
}

func (s *Spec) known(n string) error {
	if !slices.Contains(s.Nodes, n) {
		return fmt.Errorf("node %q: not in this sandbox (nodes: %s)", n, strings.Join(s.Nodes, ", "))
	}
	return nil
}

func (s *Spec) set(l Link, imp Impairment) {
	if imp.IsZero() {
		delete(s.Links, l)
		return
	}
	s.Links[l] = imp
}

// SetLink sets the impairment of the single directed link from -> to.
func (s *Spec) SetLink(from, to string, imp Impairment) error {
	if err := errors.Join(s.known(from), s.known(to)); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("link %s->%s: a node has no link to itself", from, to)
	}
	if err := imp.Validate(); err != nil {
		return fmt.Errorf("link %s->%s: %w", from, to, err)
	}
	s.set(Link{from, to}, imp)
	return nil
}

// SetNode sets imp on every link leaving node (like netem on the node's own interface:
// the node's outgoing packets are impaired, its incoming ones are not).
func (s *Spec) SetNode(node string, imp Impairment) error {
	if err := s.known(node); err != nil {
		return err
	}
	if err := imp.Validate(); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	for _, to := range s.Nodes {
		if to != node {
			s.set(Link{node, to}, imp)
		}
	}
	return nil
}

// SetAway sets imp on every link between node and each other node, both directions
// ("node X ms away from the others"); the links among the others are not touched.
// Errors: an unknown node, an invalid impairment.
func (s *Spec) SetAway(node string, imp Impairment) error {
	if err := s.known(node); err != nil {
		return err
	}
	if err := imp.Validate(); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	for _, o := range s.Nodes {
		if o != node {
			s.set(Link{node, o}, imp)
			s.set(Link{o, node}, imp)
		}
	}
	return nil
}

// SetGroups sets intra on every link between two nodes of the same group and inter on
// every link between groups. Every node must be in exactly one group.
func (s *Spec) SetGroups(groups map[string][]string, intra, inter Impairment) error {
	if err := intra.Validate(); err != nil {
		return fmt.Errorf("intra: %w", err)
	}
	if err := inter.Validate(); err != nil {
		return fmt.Errorf("inter: %w", err)
	}
	groupOf := map[string]string{}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		for _, n := range groups[g] {
			if err := s.known(n); err != nil {
				return fmt.Errorf("group %s: %w", g, err)
			}
			if o, ok := groupOf[n]; ok {
				return fmt.Errorf("node %q: in groups %s and %s", n, o, g)
			}
			groupOf[n] = g
		}
	}
	for _, n := range s.Nodes {
		if _, ok := groupOf[n]; !ok {
			return fmt.Errorf("node %q: in no group", n)
		}
	}
	for _, a := range s.Nodes {
		for _, b := range s.Nodes {
			if a == b {
				continue
			}
			if groupOf[a] == groupOf[b] {
				s.set(Link{a, b}, intra)
			} else {
				s.set(Link{a, b}, inter)
			}
		}
	}
	return nil
}

// ParseGroups reads the group form "dc1: [n1,n2], dc2: [n3]; intra 0.1ms, inter 5ms" and
// applies it to s with SetGroups. After the ';' come "intra IMPAIRMENT" and/or "inter
// IMPAIRMENT" separated by ',' (IMPAIRMENT as in ParseImpairment; an omitted one is none).
func (s *Spec) ParseGroups(text string) error {
	groupPart, impPart, ok := strings.Cut(text, ";")
	if !ok {
		return fmt.Errorf("want \"g1: [n1,n2], g2: [n3]; intra 0.1ms, inter 5ms\"")
	}
	groups := map[string][]string{}
	rest := strings.TrimSpace(groupPart)
	for rest != "" {
		name, after, ok := strings.Cut(rest, ":")
		name = strings.TrimSpace(name)
		after = strings.TrimSpace(after)
		if !ok || name == "" || !strings.HasPrefix(after, "[") {
			return fmt.Errorf("want NAME: [NODE,...] at %q", rest)
		}
		list, tail, ok := strings.Cut(after[1:], "]")
		if !ok {
			return fmt.Errorf("missing ] after group %s", name)
		}
		if _, dup := groups[name]; dup {
			return fmt.Errorf("group %q: defined twice", name)
		}
		var members []string
		for _, m := range strings.Split(list, ",") {
			if m = strings.TrimSpace(m); m != "" {
				members = append(members, m)
			}
		}
		if len(members) == 0 {
			return fmt.Errorf("group %q: empty", name)
		}
		groups[name] = members
		rest = strings.TrimPrefix(strings.TrimSpace(tail), ",")
		rest = strings.TrimSpace(rest)
	}
	var intra, inter Impairment
	seen := map[string]bool{}
	for _, clause := range strings.Split(impPart, ",") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		kind, val, _ := strings.Cut(clause, " ")
		if kind != "intra" && kind != "inter" {
			return fmt.Errorf("clause %q must start with intra or inter", clause)
		}
		if seen[kind] {
			return fmt.Errorf("%s given twice", kind)
		}
		seen[kind] = true
		imp, err := ParseImpairment(val)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		if kind == "intra" {
			intra = imp
		} else {
			inter = imp
		}
	}
	if len(groups) < 2 && !inter.IsZero() {
		return fmt.Errorf("inter: only one group, there is no link between groups")
	}
	return s.SetGroups(groups, intra, inter)
}

// Get returns the impairment of the directed link from -> to (the zero Impairment if none).
func (s *Spec) Get(from, to string) Impairment { return s.Links[Link{from, to}] }

// RequestedRTT returns the round trip a->b->a the spec asks for: Delay(a->b) + Delay(b->a)
// (mean delays, jitter and rate not included).
func (s *Spec) RequestedRTT(a, b string) time.Duration {
	return s.Get(a, b).Delay + s.Get(b, a).Delay
}
