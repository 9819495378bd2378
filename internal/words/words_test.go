package words

import "testing"

func TestPlural(t *testing.T) {
	for in, want := range map[string]string{"node": "3 nodes", "topology": "3 topologies", "key": "3 keys", "replica": "3 replicas"} {
		if got := Plural(3, in); got != want {
			t.Errorf("Plural(3, %q) = %q, want %q", in, got, want)
		}
	}
	if got := Plural(1, "topology"); got != "1 topology" {
		t.Errorf("Plural(1) = %q", got)
	}
}
