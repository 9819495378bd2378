package topology

import (
	"errors"
	"strings"
	"testing"
)

// A site's name is also what `fault partition NAME` and scenario faults take: it must not
// be a member's name or the writer alias, or that member could no longer be named.
func TestRvSiteNamesAreNotMemberNames(t *testing.T) {
	for _, sites := range []string{"{n1: [n1, n2], dc2: [n3]}", "{dc1: [n1, n2], n3: [n3]}", "{writer: [n1, n2], dc2: [n3]}"} {
		err := rvValidate(t, "name: x\nkind: async\nflavor: mariadb\nnodes: 3\nsites: "+sites+"\n")
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "sites" {
			t.Errorf("sites %s: %v, want a FieldError on sites", sites, err)
		}
	}
}

// Sites.CutOff's groups form stays valid whatever the sites are called ("others" too).
func TestRvCutOffSiteNamedOthers(t *testing.T) {
	s := Sites{{Name: "others", Nodes: []string{"n1", "n2"}}, {Name: "dc2", Nodes: []string{"n3"}}}
	for _, site := range []string{"others", "dc2"} {
		g, err := s.CutOff(site)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]int{}
		for _, part := range strings.Split(strings.Split(g, ";")[0], "],") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), ":")
			names[name]++
		}
		for n, k := range names {
			if k > 1 {
				t.Errorf("CutOff(%s) = %q: group %s named twice", site, g, n)
			}
		}
	}
}
