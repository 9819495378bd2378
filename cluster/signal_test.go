package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/habench/habench/topology"
)

// TestSignalNodeBadName: a signal other than STOP or CONT is a *topology.FieldError on
// "signal" naming the value, and nothing is signalled.
func TestSignalNodeBadName(t *testing.T) {
	c := &Cluster{Name: "fxsig", Spec: topology.Spec{Name: "fxsig", Kind: topology.Async, Nodes: 1, Flavor: topology.MariaDB}}
	err := c.SignalNode(context.Background(), nil, &Node{Name: "n1", PID: 1}, "KILL")
	var fe *topology.FieldError
	if !errors.As(err, &fe) || fe.Field != "signal" || fe.Value != "KILL" {
		t.Fatalf("SignalNode KILL: %v, want a FieldError on signal \"KILL\"", err)
	}
}
