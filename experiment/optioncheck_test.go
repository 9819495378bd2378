package experiment

import (
	"maps"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

func TestOptionMismatches(t *testing.T) {
	nodes := []schema.NodeInfo{
		{Name: "n1", Variables: map[string]string{"innodb_flush_log_at_trx_commit": "3", "sync_binlog": "1", "innodb_buffer_pool_size": "268435456", "log_slave_updates": "ON"}},
		{Name: "n2", Variables: map[string]string{"innodb_flush_log_at_trx_commit": "3", "sync_binlog": "0", "innodb_buffer_pool_size": "268435456", "log_slave_updates": "ON"}},
	}
	opts := map[string]string{
		"innodb_flush_log_at_trx_commit": "7",    // clamped by the server on both nodes
		"sync_binlog":                    "1",    // n2 differs
		"innodb-buffer-pool-size":        "256M", // the same size, spelled differently
		"loose_log_slave_updates":        "1",    // ON = 1
		"loose_plugin_option":            "x",    // not shown by the server: not checked
	}
	ws := optionMismatches(opts, nodes)
	if len(ws) != 2 {
		t.Fatalf("want 2 warnings (innodb_flush_log_at_trx_commit, sync_binlog), got %q", ws)
	}
	if !strings.Contains(ws[0], "innodb_flush_log_at_trx_commit=7") || !strings.Contains(ws[0], `n1 runs with "3", n2 runs with "3"`) {
		t.Errorf("first warning %q: want the option, the value asked for and each node's value", ws[0])
	}
	if !strings.Contains(ws[1], "sync_binlog=1") || strings.Contains(ws[1], "n1") || !strings.Contains(ws[1], `n2 runs with "0"`) {
		t.Errorf("second warning %q: want only n2", ws[1])
	}
	if ws := optionMismatches(map[string]string{"sync_binlog": "1"}, nodes[:1]); len(ws) != 0 {
		t.Errorf("an option in effect gave %q", ws)
	}
}

// TestRequestedOptions: a sandbox's nodes are checked for habench's own max_connections
// unless the topology sets it; an existing cluster only for its topology's options.
func TestRequestedOptions(t *testing.T) {
	c := &cluster.Cluster{ProviderName: "sandbox", Spec: topology.Spec{Options: map[string]string{"sync_binlog": "1"}}}
	if got := requestedOptions(c); !maps.Equal(got, map[string]string{"max_connections": "1000", "sync_binlog": "1"}) {
		t.Errorf("sandbox: %v", got)
	}
	c.Spec.Options = map[string]string{"max-connections": "300"}
	if got := requestedOptions(c); !maps.Equal(got, map[string]string{"max-connections": "300"}) {
		t.Errorf("sandbox with its own max-connections: %v", got)
	}
	nodes := []schema.NodeInfo{{Name: "n1", Variables: map[string]string{"max_connections": "151"}}}
	c.Spec.Options = nil
	if ws := optionMismatches(requestedOptions(c), nodes); len(ws) != 1 || !strings.Contains(ws[0], "max_connections=1000") {
		t.Errorf("a sandbox node on the default 151: warnings %q", ws)
	}
}
