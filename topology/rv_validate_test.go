package topology

import (
	"strings"
	"testing"
)

func rvValidate(t *testing.T, y string) error {
	t.Helper()
	s, err := ParseSpecYAML([]byte(y))
	if err != nil {
		return err
	}
	return s.Validate()
}

// The five kinds validate as before the kinds refactor (27dbf1e): a group's own checks
// (its flavors, its member count) come before the common flavor check, and the node range
// before a kind's node counts.
func TestRvValidationAsBefore(t *testing.T) {
	for y, want := range map[string]string{
		"name: x\nkind: group\nflavor: oracle\n":                       "Group Replication needs mysql or percona",
		"name: x\nkind: group\nflavor: mariadb\n":                      "MariaDB has no Group Replication",
		"name: x\nkind: group\nflavor: mysql\nnodes: 12\n":             "a group needs 3 to 9 members",
		"name: x\nkind: single\nflavor: mariadb\nnodes: 12\n":          "want 1 to 9",
		"name: x\nkind: single\nflavor: mariadb\nnodes: 2\n":           "exactly 1 node",
		"name: x\nkind: async\nflavor: mariadb\nnodes: -1\n":           "want 1 to 9",
		"name: x\nkind: galera\nflavor: mariadb\nnodes: -1\n":          "want 1 to 9",
		"name: x\nkind: galera\nflavor: mariadb\nnodes: 2\n":           "galera needs 3 to 9 nodes",
		"name: x\nkind: async\nflavor: percona\n":                      "want mysql or mariadb for a sandbox",
		"name: x\nkind: semisync\nflavor: mariadb\nnodes: 1\n":         "semisync needs a source and at least 1 replica",
		"name: x\nkind: group\nflavor: percona\ngroup: {mode: ring}\n": "want single-primary or multi-primary",
	} {
		err := rvValidate(t, y)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", y, err, want)
		}
	}
	if err := rvValidate(t, "name: x\nkind: group\nflavor: percona\n"); err != nil {
		t.Errorf("group on percona: %v", err)
	}
}
