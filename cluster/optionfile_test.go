package cluster

import (
	"strings"
	"testing"

	"github.com/habench/habench/topology"
)

// TestOptionFileOrder: a node's option file has habench's own server options, then the
// test harness's (TestServerOptionsEnv, each loose_, a bare name without a value), then the
// topology's, so the topology's win; without the variable there are no test options.
func TestOptionFileOrder(t *testing.T) {
	c := &Cluster{Name: "of", Binaries: &Binaries{Flavor: topology.MySQL}}
	n := &Node{Name: "n1", ServerDir: "/x/n1", Port: 3306, Host: "127.0.0.1"}
	np := topology.NodePlan{Options: []topology.Option{{Name: "performance_schema_digests_size", Value: "50"}}}
	t.Setenv(TestServerOptionsEnv, "")
	if f := nodeOptionFile(c, n, np, false, false); strings.Contains(f, "loose_") {
		t.Errorf("option file without %s has loose_ options:\n%s", TestServerOptionsEnv, f)
	}
	t.Setenv(TestServerOptionsEnv, " performance_schema_digests_size=0  loose_performance_schema_error_size=0 skip_name_resolve ")
	f := nodeOptionFile(c, n, np, false, false)
	want := []string{"max_connections=1000\n", "loose_performance_schema_digests_size=0\n", "loose_performance_schema_error_size=0\n", "loose_skip_name_resolve\n", "performance_schema_digests_size=50\n"}
	at := -1
	for _, w := range want {
		i := strings.Index(f, w)
		if i <= at {
			t.Fatalf("option file lacks %q after the options before it (order %q):\n%s", w, want, f)
		}
		at = i
	}
}

// TestOptionErrorSkipsLoose: a server log's unknown loose_ option (a warning: the server
// started without it, as MariaDB does with the test harness's MySQL-only options) is not
// the option the server refused; the unknown option after it is.
func TestOptionErrorSkipsLoose(t *testing.T) {
	log := "2026-12-06 22:17:14 0 [Warning] /usr/sbin/mariadbd: unknown variable 'loose_performance_schema_error_size=0'\n" +
		"2026-12-06 22:17:14 0 [ERROR] /usr/sbin/mariadbd: unknown variable 'innodb-bogus=1'\n"
	if fe := optionError(log); fe == nil || fe.Value != "innodb_bogus" {
		t.Errorf("optionError = %+v, want innodb_bogus", fe)
	}
	if fe := optionError(strings.SplitAfter(log, "\n")[0]); fe != nil {
		t.Errorf("optionError of a loose_ warning alone = %+v, want nil", fe)
	}
}
