package topology

import (
	"slices"
	"testing"
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
