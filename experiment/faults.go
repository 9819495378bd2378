package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
)

// FaultsFile is the cluster directory's log of injected faults, one JSON object per
// line (FaultRecord), appended by `habench fault` and read by the runs on the cluster.
const FaultsFile = "faults.jsonl"

// FaultRecord is one injected fault.
type FaultRecord struct {
	// At is when the fault was injected (UTC); Took how long the action took, in seconds.
	At   time.Time `json:"at"`
	Took float64   `json:"took_s"`
	// Action is kill, stop, start, restart, partition, heal or promote; Node the node it
	// hit (the writer alias resolved); PID the server's process before the fault.
	Action string `json:"action"`
	Node   string `json:"node"`
	PID    int    `json:"pid,omitempty"`
	// Error is why the action failed ("" when it did not).
	Error string `json:"error,omitempty"`
}

// RunFault is a FaultRecord as a run saw it: AtS is the fault's time in seconds on
// samples.csv's clock.
type RunFault struct {
	AtS float64 `json:"at_s"`
	FaultRecord
}

// AppendFault appends r to the cluster's faults log.
func AppendFault(c *cluster.Cluster, r FaultRecord) error {
	if c.Dir() == "" {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(c.Dir(), FaultsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// faultsDuring returns the faults of cluster c injected between from and to, with their
// times on the clock that starts at epoch. A missing log is no faults; unreadable lines
// are skipped.
func faultsDuring(c *cluster.Cluster, epoch, from, to time.Time) []RunFault {
	if c == nil || c.Dir() == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(c.Dir(), FaultsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []RunFault
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r FaultRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.At.Before(from) || r.At.After(to) {
			continue
		}
		out = append(out, RunFault{AtS: r.At.Sub(epoch).Seconds(), FaultRecord: r})
	}
	return out
}

// faultWarning is the run's WARNING for faults injected during it ("" when none).
func faultWarning(faults []RunFault) string {
	if len(faults) == 0 {
		return ""
	}
	var parts []string
	for _, f := range faults {
		s := fmt.Sprintf("%s %s at %.1fs", f.Action, f.Node, f.AtS)
		if f.Error != "" {
			s += " (failed)"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("faults were injected during the run (habench fault): %s; its numbers include them (samples.csv's clock)", strings.Join(parts, ", "))
}

// faultedDown returns the nodes that a kill or stop among faults left down (no later
// start or restart of the same node).
func faultedDown(faults []RunFault) map[string]bool {
	down := map[string]bool{}
	for _, f := range faults {
		if f.Error != "" {
			continue
		}
		switch f.Action {
		case "kill", "stop":
			down[f.Node] = true
		case "start", "restart":
			delete(down, f.Node)
		}
	}
	return down
}
