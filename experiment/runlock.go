package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
)

// runLock is the lock a run holds on its cluster for its whole length, with its owner
// (pid, start, command line) written inside.
const runLock = "run.lock"

// lockRun takes cluster c's run lock: a second run on the same cluster at the same time
// would measure the first one's load and change its knobs. Error, naming the other run's
// pid, start time and command, when it is held.
func lockRun(c *cluster.Cluster, cmdline []string) (func(), error) {
	if c == nil || c.Dir() == "" {
		return func() {}, nil
	}
	unlock, err := c.Lock(runLock, true)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(c.Dir(), runLock)
	if unlock == nil {
		owner, _ := os.ReadFile(p)
		who := strings.TrimSpace(string(owner))
		if who == "" {
			who = "owner unknown"
		}
		return nil, fmt.Errorf("cluster %s: another run is going on (%s): wait for it to end, or run on another cluster", c.Name, who)
	}
	owner := fmt.Sprintf("pid %d since %s: %s", os.Getpid(), time.Now().UTC().Format("15:04:05"), strings.Join(RedactArgs(cmdline), " "))
	if f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
		f.WriteString(owner + "\n")
		f.Close()
	}
	return func() {
		os.WriteFile(p, nil, 0o600)
		unlock()
	}, nil
}
