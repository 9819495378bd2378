package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/habench/habench/topology"
)

// OptionFile returns the host path of sandbox node n's option file (the my.cnf its server
// reads at start); "" for an existing cluster's node.
func (c *Cluster) OptionFile(n *Node) string {
	if !c.Deployed() || n.Dir == "" {
		return ""
	}
	return filepath.Join(n.Dir, "my.cnf")
}

// KnobsMarker is the comment above the lines SetOptionLines appends to an option file.
const KnobsMarker = "# set by habench knobs"

// optionKey normalises an option file name: dashes to underscores, no loose_ prefix.
func optionKey(name string) string {
	return strings.TrimPrefix(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_"), "loose_")
}

// OptionLineValue returns the value of name in option file content (the last [mysqld]
// line that sets it, names compared without loose_ prefix and with - as _) and whether
// one sets it.
func OptionLineValue(content, name string) (string, bool) {
	want := optionKey(name)
	val, found := "", false
	section := ""
	for _, l := range strings.Split(content, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			section = strings.ToLower(strings.Trim(t, "[] "))
			continue
		}
		if section != "mysqld" || t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		k, v, _ := strings.Cut(t, "=")
		if optionKey(k) == want {
			val, found = strings.TrimSpace(v), true
		}
	}
	return val, found
}

// SetOptionLines returns option file content with each option set: a [mysqld] line that
// already sets it (same name without loose_ prefix, - or _) is replaced in place, keeping
// its spelling; the others are appended under KnobsMarker at the end of the [mysqld]
// section (a [mysqld] header is added when there is none). Pure.
func SetOptionLines(content string, opts []topology.Option) string {
	lines := strings.Split(strings.TrimRight(content, "\n"), "\n")
	done := map[string]bool{}
	section := ""
	lastMysqld := -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			section = strings.ToLower(strings.Trim(t, "[] "))
			if section == "mysqld" {
				lastMysqld = i
			}
			continue
		}
		if section != "mysqld" {
			continue
		}
		lastMysqld = i
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		k, _, _ := strings.Cut(t, "=")
		for _, o := range opts {
			if optionKey(k) == optionKey(o.Name) {
				lines[i] = strings.TrimSpace(k) + "=" + o.Value
				done[optionKey(o.Name)] = true
			}
		}
	}
	var add []string
	for _, o := range opts {
		if !done[optionKey(o.Name)] {
			add = append(add, o.Name+"="+o.Value)
			done[optionKey(o.Name)] = true
		}
	}
	if len(add) > 0 {
		if !strings.Contains(content, KnobsMarker) {
			add = append([]string{KnobsMarker}, add...)
		}
		if lastMysqld < 0 {
			lines = append(append(lines, "[mysqld]"), add...)
		} else {
			lines = append(lines[:lastMysqld+1], append(add, lines[lastMysqld+1:]...)...)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// ReadOptionFile returns node n's option file, from c's provider (*UnsupportedError
// when it has none habench may read).
func (c *Cluster) ReadOptionFile(n *Node) (string, error) {
	if err := c.Refuse(OpOptionFiles, ""); err != nil {
		return "", err
	}
	return c.Provider().ReadOptionFile(c, n)
}

// WriteOptionFile replaces node n's option file (read at its next start), through c's
// provider (*UnsupportedError when it has none habench may write).
func (c *Cluster) WriteOptionFile(n *Node, content string) error {
	if err := c.Refuse(OpOptionFiles, ""); err != nil {
		return err
	}
	return c.Provider().WriteOptionFile(c, n, content)
}

// RestartNode stops sandbox node's server cleanly, starts it again (it rereads its option
// file) and waits until the topology is whole again (WaitTopologyReady); a Group
// Replication member rejoins its group (StartNode) and, if it was the primary of a
// single-primary group, is made the primary again. Values set with
// SET GLOBAL and not in the option file are lost, as with any restart. Refused for an
// existing cluster. Errors name the node and carry the server's error log lines. A stop
// that took SIGKILL does not end the restart: when the rest succeeded, the error is that
// *StopEscalatedError alone (the node is up again, but it crashed on the way).
func (s *Store) RestartNode(ctx context.Context, c *Cluster, node string) error {
	if err := c.Refuse(OpRestartNode, "restart node "+node); err != nil {
		return err
	}
	start := time.Now()
	primaryAgain := c.keepGroupPrimary(ctx, node)
	escalated := s.StopNode(c, node)
	var se *StopEscalatedError
	if escalated != nil && !errors.As(escalated, &se) {
		return escalated
	}
	if err := s.StartNode(ctx, c, node); err != nil {
		return err
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = 90 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
	defer cancel()
	if err := WaitTopologyReady(wctx, c); err != nil {
		return fmt.Errorf("after restarting %s: %w", node, err)
	}
	if err := primaryAgain(wctx); err != nil {
		return fmt.Errorf("after restarting %s: %w", node, err)
	}
	s.log().Info("node restarted", "cluster", c.Name, "node", node, "elapsed", time.Since(start).Round(time.Millisecond))
	return escalated
}

// WaitTopologyReady waits until every node accepts connections and the topology's own
// condition holds again (KindOps.Ready): every replica's receiver and applier threads
// running, and on a semi-sync source the configured number of acknowledging replicas;
// every Group Replication member ONLINE; every Galera node Synced in a Primary component
// of the full size. An error is the *NodeError of the first node found not ready.
func WaitTopologyReady(ctx context.Context, c *Cluster) error {
	for _, n := range c.Nodes {
		if err := c.Ping(ctx, n); err != nil {
			return OfNode(n.Name, err)
		}
	}
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			return OfNode(n.Name, err)
		}
		err = c.nodeReady(ctx, n, db)
		db.Close()
		if err != nil {
			return OfNode(n.Name, err)
		}
	}
	return nil
}
