package knob

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/schema"
)

// PendingFile is the name, in the cluster's directory, of the record of values a run
// changed and has not restored yet.
const PendingFile = "knobs-pending.json"

type pendingRecord struct {
	Cluster string `json:"cluster"`
	PID     int    `json:"pid"`
	// StartTicks is the run's process start time (cluster.ProcessStartTicks): with PID it
	// identifies the run, so a PID reused after kill -9 is not taken for it.
	StartTicks  uint64            `json:"start_ticks,omitempty"`
	Started     time.Time         `json:"started"`
	Requested   []string          `json:"requested"`
	Entries     []pendingEntry    `json:"entries"`
	OptionFiles map[string]string `json:"option_files,omitempty"`
}

type pendingEntry struct {
	Node    string `json:"node"`
	Knob    string `json:"knob"`
	Target  Target `json:"target"`
	Before  string `json:"before"`
	Changed bool   `json:"changed"`
	// Primary: group mode, the single-primary group's primary before (see entry.primary).
	Primary string `json:"primary,omitempty"`
}

// pendingPath is the cluster's pending record ("" for a cluster never saved).
func pendingPath(c *cluster.Cluster) string {
	if c.Dir() == "" {
		return ""
	}
	return filepath.Join(c.Dir(), PendingFile)
}

// pendingHolder says who holds knobs on c ("" when nobody).
func pendingHolder(c *cluster.Cluster) string {
	p := pendingPath(c)
	if p == "" {
		return ""
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	var r pendingRecord
	if json.Unmarshal(b, &r) != nil {
		return fmt.Sprintf("an unreadable %s: habench knob restore %s", p, c.Name)
	}
	if r.PID > 0 && processAlive(r.PID, r.StartTicks) {
		return fmt.Sprintf("a run (pid %d, started %s) holds knobs %s on it; wait for it to end", r.PID, r.Started.Format(time.RFC3339), strings.Join(r.Requested, " "))
	}
	if r.PID == os.Getpid() {
		return fmt.Sprintf("this run could not restore knobs %s: habench knob restore %s", strings.Join(r.Requested, " "), c.Name)
	}
	return fmt.Sprintf("an interrupted run (pid %d) left knobs %s changed: habench knob restore %s", r.PID, strings.Join(r.Requested, " "), c.Name)
}

// processAlive reports whether the run pid (started at ticks, when recorded) is alive
// and is not this process.
func processAlive(pid int, ticks uint64) bool {
	return pid != os.Getpid() && cluster.ProcessAlive(pid, ticks)
}

// writePending records the previous values; create makes the file exclusively (the lock
// that keeps two runs from changing knobs on one cluster at once).
func (a *Applied) writePending(create bool) error {
	p := pendingPath(a.c)
	if p == "" {
		return nil
	}
	r := pendingRecord{Cluster: a.c.Name, PID: os.Getpid(), Started: time.Now().UTC(), OptionFiles: a.optionFiles}
	r.StartTicks, _ = cluster.ProcessStartTicks(r.PID)
	for _, k := range a.req {
		r.Requested = append(r.Requested, k.String())
	}
	for _, e := range a.entries {
		r.Entries = append(r.Entries, pendingEntry{Node: e.Node, Knob: e.Knob, Target: e.t, Before: e.Before, Changed: true, Primary: e.primary})
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if create {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, os.ErrExist) {
			if h := pendingHolder(a.c); h != "" {
				return fmt.Errorf("cluster %s: %s", a.c.Name, h)
			}
			return fmt.Errorf("cluster %s: %s exists", a.c.Name, p)
		}
		if err != nil {
			return err
		}
		a.pendingPath = p
		_, err = f.Write(b)
		return errors.Join(err, f.Close())
	}
	if a.pendingPath == "" {
		return nil
	}
	return atomicfile.WriteFile(p, b, 0o600)
}

func (a *Applied) removePending() {
	if a.pendingPath != "" {
		os.Remove(a.pendingPath)
		a.pendingPath = ""
	}
}

// Pending reports what an interrupted run left changed on c ("" when nothing).
func Pending(c *cluster.Cluster) string { return pendingHolder(c) }

// RestorePending restores the values an interrupted run recorded in the cluster's pending
// record (habench knob restore). Refused while that run is still alive. Returns the
// restored values; nil, nil when there is nothing to restore.
func RestorePending(ctx context.Context, c *cluster.Cluster, opt Options) ([]schema.KnobValue, error) {
	p := pendingPath(c)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) || p == "" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r pendingRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if r.PID > 0 && processAlive(r.PID, r.StartTicks) {
		return nil, fmt.Errorf("cluster %s: %s", c.Name, pendingHolder(c))
	}
	a := &Applied{c: c, opt: opt, dbs: map[string]*sql.DB{}, optionFiles: map[string]string{}, pendingPath: p}
	for node, content := range r.OptionFiles {
		a.optionFiles[node] = content
	}
	if len(a.optionFiles) > 0 && opt.Restarter == nil {
		return nil, fmt.Errorf("cluster %s: restoring option files needs node restarts", c.Name)
	}
	groupSwitch := false
	for _, pe := range r.Entries {
		n := c.Node(pe.Node)
		if n == nil {
			continue
		}
		e := &entry{node: n, t: pe.Target, changed: pe.Changed, primary: pe.Primary,
			KnobValue: schema.KnobValue{Node: pe.Node, Knob: pe.Knob, Variable: pe.Target.Label(), Method: string(pe.Target.Method), Requested: pe.Target.Value, Before: pe.Before}}
		if pe.Target.Method == MethodGroupMode && !groupSwitch {
			if SwitchGroupMode == nil {
				return nil, fmt.Errorf("cluster %s: restoring group_replication_mode needs cluster.SwitchGroupMode, not wired into this build", c.Name)
			}
			e.first, groupSwitch = true, true
		}
		a.entries = append(a.entries, e)
	}
	err = a.Restore(ctx)
	return a.Values(), err
}
