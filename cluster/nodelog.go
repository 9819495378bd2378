package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"
)

// NodeError is an error of one node of a cluster (its start, its rejoin, a readiness
// wait): Node is its name. Its message is Err's, which names the node; callers keep the
// node's error log with it (ErrorLogTail).
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// OfNode wraps err as node's *NodeError (nil for nil; err itself when it is a NodeError
// already).
func OfNode(node string, err error) error {
	var ne *NodeError
	if err == nil || errors.As(err, &ne) {
		return err
	}
	return &NodeError{Node: node, Err: err}
}

// ErrorLogTail is the last lines lines of node n's server error log (error.log in its
// directory: on this machine, or read on its host). Errors: a cluster whose servers
// habench did not deploy (no error log of its own), a log that cannot be read.
func (c *Cluster) ErrorLogTail(n *Node, lines int) (string, error) {
	if !c.Deployed() || n.Dir == "" {
		return "", fmt.Errorf("node %s: habench keeps no error log of a server it did not deploy", n.Name)
	}
	b, err := c.readNodeFile(n, "error.log")
	if err != nil {
		return "", fmt.Errorf("node %s: %w", n.Name, err)
	}
	return tail(string(b), lines), nil
}

// waited is how long a wait that began at start lasted, for error messages ("1m30s",
// "9.8s").
func waited(start time.Time) time.Duration {
	return time.Since(start).Round(100 * time.Millisecond)
}

// readNodeFile reads file rel (relative to n.Dir) of node n of c: on its host over SSH
// for the hosts provider, else on this machine. The error names the file (and host).
func (c *Cluster) readNodeFile(n *Node, rel string) ([]byte, error) {
	h := c.hostsSSH(n)
	if h == nil {
		return os.ReadFile(filepath.Join(n.Dir, rel))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	b, err := h.ReadFile(ctx, path.Join(n.Dir, rel))
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", path.Join(n.Dir, rel), h.Name(), err)
	}
	return b, nil
}

// nodeFileText is readNodeFile as text, "" when it cannot be read.
func (c *Cluster) nodeFileText(n *Node, rel string) string {
	b, _ := c.readNodeFile(n, rel)
	return string(b)
}
