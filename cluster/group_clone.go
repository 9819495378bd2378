package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/topology"
)

// erCloneNoSupervisor is how MySQL answers a CLONE INSTANCE into
// its own datadir when no supervisor restarts it (3707, "Restart server failed (mysqld is
// not managed by supervisor process)"): the data was cloned and the server shuts down.
const erCloneNoSupervisor = 3707

// CloneReport is what CloneNode did.
type CloneReport struct {
	// Donor is the member the data came from.
	Donor string
	// Took is from CLONE INSTANCE to the recipient's exit (the transfer and the shutdown).
	Took time.Duration
}

// CloneNode replaces the data of group member n with a clone of another member's (a
// SECONDARY that is ONLINE when there is one, else the PRIMARY): n leaves the group (STOP
// GROUP_REPLICATION), runs CLONE INSTANCE FROM the donor's SQL address as the recovery user
// (BACKUP_ADMIN and the clone plugin come with the deploy: topology.Capabilities.Clone), and
// then shuts down, its server not being managed by a supervisor. timeout bounds the clone
// and the shutdown together. The caller starts n again: the server puts the cloned data in
// place on that start, and rejoining the group recovers what was committed since. When the
// clone fails, n is made read-only again and put back into the group (best effort; a
// clone still running on the server after the timeout is killed first). Errors: a server
// without the clone plugin, no other member ONLINE with it, the server's error, a member
// left out of the group (said so).
func (c *Cluster) CloneNode(ctx context.Context, n *Node, timeout time.Duration) (CloneReport, error) {
	if !slices.Contains(c.groupNodes(), n) {
		return CloneReport{}, fmt.Errorf("node %s is not a group member: only members are rebuilt by clone", n.Name)
	}
	if !c.Capabilities().Clone {
		return CloneReport{}, fmt.Errorf("node %s: the server has no clone plugin (MySQL 8.0.17 and later): no rebuild by clone", n.Name)
	}
	donor, err := c.cloneDonor(ctx, n)
	if err != nil {
		return CloneReport{}, err
	}
	rep := CloneReport{Donor: donor.Name}
	db, err := c.OpenAdmin(n)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	if err := clonePluginActive(ctx, db, n.Name); err != nil {
		return rep, err
	}
	if _, err := db.ExecContext(ctx, "STOP GROUP_REPLICATION"); err != nil {
		return rep, fmt.Errorf("node %s: STOP GROUP_REPLICATION: %w", n.Name, err)
	}
	addr := net.JoinHostPort(donor.Host, strconv.Itoa(donor.Port))
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := runClone(cctx, db, donor, addr, c.Credentials().ReplPass()); err != nil {
		err = fmt.Errorf("node %s: clone from %s (%s): %w", n.Name, donor.Name, addr, err)
		return rep, errors.Join(err, backIntoGroup(context.WithoutCancel(ctx), db, n.Name))
	}
	if err := c.waitNodeDown(cctx, n); err != nil {
		return rep, fmt.Errorf("%w; it is out of the group", err)
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// backIntoGroup makes n read-only again and starts Group Replication on it after a clone
// that did not happen; the error says n is out of the group.
func backIntoGroup(ctx context.Context, db *sql.DB, node string) error {
	for _, q := range []string{"SET GLOBAL super_read_only = ON", "START GROUP_REPLICATION"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("node %s: back into the group: %s: %w; it is out of the group", node, q, err)
		}
	}
	return nil
}

// runClone lifts super_read_only, sets the donor list and runs CLONE INSTANCE on one
// connection of db; the recipient's answer that no supervisor restarts it
// (erCloneNoSupervisor) is success. When ctx ends first, the clone is killed on the server
// (KILL QUERY of that connection) so that it does not go on beside what follows.
func runClone(ctx context.Context, db *sql.DB, donor *Node, addr, password string) error {
	for _, v := range []string{topology.ReplUser, donor.Host, password} {
		if strings.ContainsAny(v, "\\'") {
			return fmt.Errorf("%q: a quote or backslash cannot go into CLONE INSTANCE here", v)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		return err
	}
	// The recipient's data is replaced, so it must be writable: a member out of the group
	// is super_read_only (its option file sets it again for the start on the clone).
	for _, q := range []string{"SET GLOBAL super_read_only = OFF", "SET GLOBAL clone_valid_donor_list = '" + addr + "'"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	q := fmt.Sprintf("CLONE INSTANCE FROM '%s'@'%s':%d IDENTIFIED BY '%s'", topology.ReplUser, donor.Host, donor.Port, password)
	_, err = conn.ExecContext(ctx, q)
	var me *mysql.MySQLError
	if err == nil || errors.As(err, &me) && me.Number == erCloneNoSupervisor {
		return nil
	}
	if ctx.Err() != nil {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, kerr := db.ExecContext(kctx, fmt.Sprintf("KILL QUERY %d", id)); kerr != nil {
			err = errors.Join(err, fmt.Errorf("killing the clone: %w", kerr))
		}
	}
	return err
}

// cloneDonor is the member n clones from: an ONLINE SECONDARY other than n (the primary
// keeps serving the writes), else the ONLINE PRIMARY; its clone plugin must be active.
func (c *Cluster) cloneDonor(ctx context.Context, n *Node) (*Node, error) {
	var primary *Node
	var lastErr error
	for _, o := range c.groupNodes() {
		if o == n || c.NodeDown(o) {
			continue
		}
		db, err := c.OpenAdmin(o)
		if err != nil {
			continue
		}
		m, err := ReadGroupMember(ctx, db, o.Name)
		if err == nil && m.State == "ONLINE" {
			if perr := clonePluginActive(ctx, db, o.Name); perr != nil {
				lastErr = perr // another member may have it
			} else if m.Role != "PRIMARY" {
				db.Close()
				return o, nil
			} else {
				primary = o
			}
		}
		db.Close()
	}
	if primary != nil {
		return primary, nil
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return nil, fmt.Errorf("cluster %s: no member but %s is ONLINE to clone from", c.Name, n.Name)
}

// clonePluginActive is nil when the clone plugin is ACTIVE on db's server.
func clonePluginActive(ctx context.Context, db *sql.DB, node string) error {
	var status string
	err := db.QueryRowContext(ctx, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'").Scan(&status)
	if errors.Is(err, sql.ErrNoRows) || err == nil && status != "ACTIVE" {
		return fmt.Errorf("node %s: the clone plugin is not active (%s): a cluster deployed by an older habench has no plugin_load_add=mysql_clone.so; deploy it again", node, cmpStatus(status))
	}
	if err != nil {
		return fmt.Errorf("node %s: reading the clone plugin's status: %w", node, err)
	}
	return nil
}

func cmpStatus(s string) string {
	if s == "" {
		return "not installed"
	}
	return s
}

// waitNodeDown waits until c's provider knows n's server is not running, or ctx ends.
func (c *Cluster) waitNodeDown(ctx context.Context, n *Node) error {
	for !c.NodeDown(n) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: its server still runs after the clone (it shuts down to put the cloned data in place): %w", n.Name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
