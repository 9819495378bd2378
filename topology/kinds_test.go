package topology

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKindsRegistered(t *testing.T) {
	if errs := RegistrationErrors(); len(errs) > 0 {
		t.Fatalf("refused kind registrations: %v", errs)
	}
	for _, k := range []Kind{Single, Async, SemiSync, Group, Galera} {
		if _, err := LookupKind(k); err != nil {
			t.Errorf("kind %s: %v", k, err)
		}
	}
	ks := Kinds()
	if i, j := slices.Index(ks, Single), slices.Index(ks, Galera); i < 0 || j < 0 || i > j {
		t.Errorf("Kinds() = %v: want single listed before galera", ks)
	}
	if _, err := LookupKind("ring"); err == nil {
		t.Error(`LookupKind("ring"): no error`)
	}
}

func TestKindIs(t *testing.T) {
	if !Group.Is(Group) || Group.Is(Galera) || Kind("").Is(Group) {
		t.Error("Is: a kind is itself and nothing else")
	}
	RegisterKind(KindDef{Kind: "testext", Base: Galera, Plan: planGalera})
	defer delete(kindDefs, "testext")
	if !Kind("testext").Is(Galera) || Kind("testext").Is(Group) {
		t.Error("a kind with Base galera Is(galera) and not Is(group)")
	}
	RegisterKind(KindDef{Kind: "testext", Plan: planGalera})
	if errs := RegistrationErrors(); len(errs) != 1 {
		t.Errorf("a second registration of testext: errors %v, want one", errs)
	}
	kindErrs = nil
}

// A kind extending galera claims specs written as kind galera with its own key, and a
// key no kind defines is an error naming it.
func TestKindClaimAndKeys(t *testing.T) {
	RegisterKind(KindDef{Kind: "testarb", Base: Galera, Plan: planGalera, Keys: []string{"galera.arbitrator"},
		Claim: func(s *Spec) bool { return s.Galera.Extra["arbitrator"] == true }})
	defer delete(kindDefs, "testarb")
	s, err := ParseSpecYAML([]byte("name: x\nkind: galera\nflavor: mariadb\nnodes: 4\ngalera: {arbitrator: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "testarb" || s.Galera.SST != SSTRsync {
		t.Errorf("kind %q sst %q: want testarb claimed, galera defaults kept", s.Kind, s.Galera.SST)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	s, err = ParseSpecYAML([]byte("name: x\nkind: galera\nflavor: mariadb\ngalera: {arbiter: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "galera.arbiter") || !strings.Contains(err.Error(), "arbitrator") {
		t.Errorf("unknown galera key: %v, want an error naming galera.arbiter and the known arbitrator", err)
	}
}

func TestSites(t *testing.T) {
	s, err := ParseSpecYAML([]byte("name: x\nkind: async\nflavor: mariadb\nnodes: 3\nsites: {dc2: [n3], dc1: [n1, n2]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Sites.Names(), ","); got != "dc2,dc1" {
		t.Errorf("site order %s: want the file's order dc2,dc1", got)
	}
	if s.Sites.SiteOf("n2") != "dc1" {
		t.Errorf("SiteOf(n2) = %q", s.Sites.SiteOf("n2"))
	}
	g, err := s.Sites.CutOff("dc2")
	if err != nil || g != "dc2: [n3], others: [n1,n2]; inter partition" {
		t.Errorf("CutOff(dc2) = %q, %v", g, err)
	}
	b, _ := json.Marshal(s)
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil || len(back.Sites) != 2 || back.Sites[1].Nodes[1] != "n2" {
		t.Errorf("JSON round trip: %v %+v", err, back.Sites)
	}
	for _, bad := range []string{"sites: {dc1: [n1, n2]}", "sites: {dc1: [n1, n2], dc2: [n3, n2]}", "sites: {dc1: [n1, n2], dc2: [n3, n9]}", "sites: {DC: [n1, n2, n3]}"} {
		s, err := ParseSpecYAML([]byte("name: x\nkind: async\nflavor: mariadb\nnodes: 3\n" + bad + "\n"))
		if err == nil {
			err = s.Validate()
		}
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(fe.Field, "sites") {
			t.Errorf("%s: %v, want a FieldError on sites", bad, err)
		}
	}
}

// A kind with a Base and nothing else set describes itself as its base does; its own
// fields win; a kind without a Plan or a Base is refused.
func TestKindInheritsFromBase(t *testing.T) {
	RegisterKind(KindDef{Kind: "testinh", Base: Galera, RestartPerNode: time.Minute})
	defer delete(kindDefs, "testinh")
	d, g := KindOf("testinh"), KindOf(Galera)
	if d.Plan == nil || d.ConflictErrors == nil || d.NoSingleWriter == nil || d.Deploy == nil {
		t.Fatal("testinh: want galera's Plan, ConflictErrors, NoSingleWriter and Deploy")
	}
	if !slices.Equal(d.Samplers, g.Samplers) || d.MemberWord != "node" || d.DefaultNodes != g.DefaultNodes || d.RestartPerNode != time.Minute {
		t.Errorf("testinh: samplers %v member word %q nodes %d restart %v: want galera's, and its own restart estimate", d.Samplers, d.MemberWord, d.DefaultNodes, d.RestartPerNode)
	}
	if a := KindOf(GaleraArbitrator); a.Plan == nil || a.MemberWord != "node" || a.DefaultNodes != 4 {
		t.Errorf("galera-arbitrator: plan %v, member word %q, default nodes %d: want galera's plan and word, its own 4 nodes", a.Plan != nil, a.MemberWord, a.DefaultNodes)
	}
	if r := KindOf(Async); r.MemberWord != "replica" || r.DefaultNodes != 3 {
		t.Errorf("async: member word %q, default nodes %d", r.MemberWord, r.DefaultNodes)
	}
	RegisterKind(KindDef{Kind: "testnoplan"})
	if _, err := LookupKind("testnoplan"); err == nil || len(RegistrationErrors()) != 1 {
		t.Errorf("a kind without a Plan or a Base: registered (%v)", RegistrationErrors())
	}
	kindErrs = nil
}
