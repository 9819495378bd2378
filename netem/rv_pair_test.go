package netem

import (
	"errors"
	"strings"
	"testing"
)

// A site pair is one pair both ways: dc1-dc2 and dc2-dc1 in one request name the same
// links, and which one won depended on their sort order.
func TestRvPairGivenTwice(t *testing.T) {
	sites := []Site{{"dc1", []string{"n1", "n2"}}, {"dc2", []string{"n3"}}}
	r := Request{Pair: map[string]string{"dc1-dc2": "5ms", "dc2-dc1": "3ms"}}
	_, err := r.WithSites(sites).Build([]string{"n1", "n2", "n3"})
	var re *RequestError
	if !errors.As(err, &re) || re.Field != "pair" || !strings.Contains(err.Error(), "twice") {
		t.Errorf("dc1-dc2 and dc2-dc1: %v, want a RequestError on pair saying the pair is given twice", err)
	}
}
