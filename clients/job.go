package clients

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/habench/habench/workload"
)

// Job is what the coordinator sends a client on its standard input (one line of JSON, the
// first): what to run, against what, and when. The password travels here, never on a
// command line (which `ps` shows). After the job the coordinator keeps the client's
// standard input open: its end (EOF: the coordinator, or its SSH connection, is gone)
// ends the client's run.
type Job struct {
	// Format is the stream's format (Format); a client refuses a job of another.
	Format int `json:"format"`
	// Client is the client's name, which its hello repeats.
	Client string `json:"client"`
	// Workload is the test (workload.Lookup's name); Options its options, with this
	// client's share of Threads, Rate and Events (Split).
	Workload string           `json:"workload"`
	Options  workload.Options `json:"options"`
	// Endpoints and ReadEndpoints are the workers' endpoints (workload.Target's); User,
	// Password and DB the credentials and database.
	Endpoints     []workload.Endpoint `json:"endpoints"`
	ReadEndpoints []workload.Endpoint `json:"read_endpoints,omitempty"`
	User          string              `json:"user"`
	Password      string              `json:"password,omitempty"`
	DB            string              `json:"db"`
	// Start is when the client starts its run, on the client's clock (the coordinator's
	// start moved by the client's measured clock offset). A client sets its workers up
	// (connections, prepared statements) after Start, so the runs' measured parts begin
	// within that setup time of each other.
	Start time.Time `json:"start"`
	// RemoveDir is the directory on the client's host that the coordinator made for this
	// run (its copy of habench: CopyDirPrefix), which the client removes when it ends
	// (RemoveOwnDir), so that nothing is left when the coordinator is gone; "": none.
	RemoveDir string `json:"remove_dir,omitempty"`
}

// CopyDirPrefix is the name prefix of a directory the coordinator makes on a client's host
// for its copy of habench (under /tmp: CopyDirTemplate); a client removes no other.
const CopyDirPrefix = "habench-client-"

// CopyDirTemplate is mktemp -d's template for such a directory.
const CopyDirTemplate = "/tmp/" + CopyDirPrefix + "XXXXXXXX"

// CheckCopyDir returns an error unless dir is an absolute, clean path whose name starts
// with CopyDirPrefix and is longer: the only directories a client or the coordinator
// removes.
func CheckCopyDir(dir string) error {
	base := filepath.Base(dir)
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !strings.HasPrefix(base, CopyDirPrefix) || len(base) == len(CopyDirPrefix) {
		return fmt.Errorf("job: remove_dir %q: not a directory %s* of the coordinator's", dir, CopyDirPrefix)
	}
	return nil
}

// RemoveOwnDir removes dir (Job.RemoveDir) when it is a copy directory (CheckCopyDir)
// that holds this running program (os.Executable): a client removes its own copy and
// nothing else. "" is nothing to do.
func RemoveOwnDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := CheckCopyDir(dir); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("job: remove_dir %q: %w", dir, err)
	}
	if filepath.Dir(exe) != dir {
		return fmt.Errorf("job: remove_dir %q: this client runs %s, not a copy there", dir, exe)
	}
	return os.RemoveAll(dir)
}

// Target is the job's workload.Target.
func (j *Job) Target() workload.Target {
	return workload.Target{Endpoints: j.Endpoints, ReadEndpoints: j.ReadEndpoints, User: j.User, Password: j.Password, DB: j.DB}
}

// Check checks a job as a client receives it: its format, a client name, a known workload,
// valid options and target. The error names the field.
func (j *Job) Check() error {
	if j.Format != Format {
		return fmt.Errorf("job: format %d, this client's is %d", j.Format, Format)
	}
	if j.Client == "" {
		return fmt.Errorf("job: no client name")
	}
	if _, err := workload.Lookup(j.Workload); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	if err := j.Options.Validate(); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	if err := j.Target().Validate(); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	if j.Start.IsZero() {
		return fmt.Errorf("job: no start time")
	}
	if j.RemoveDir != "" {
		if err := CheckCopyDir(j.RemoveDir); err != nil {
			return err
		}
	}
	return nil
}

// encodeJob is j as one line.
func encodeJob(j Job) ([]byte, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Split divides a run's options among n clients: client k (0-based) gets its share of
// Threads, Rate and Events (the remainders to the first clients), and RandSeed + k when a
// seed is set (so that clients do not draw the same rows). Errors, naming the option:
// n < 1, fewer threads than clients, a rate or an event limit below one per client (a
// client's 0 would mean unlimited).
func Split(o workload.Options, n int) ([]workload.Options, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("clients: %d, want at least 1", n)
	case o.Threads < n:
		return nil, fmt.Errorf("--threads %d: fewer than the %d clients (each client runs at least one thread)", o.Threads, n)
	case o.Rate > 0 && o.Rate < n:
		return nil, fmt.Errorf("--rate %d: below one transaction per second for each of the %d clients", o.Rate, n)
	case o.Events > 0 && o.Events < int64(n):
		return nil, fmt.Errorf("--events %d: fewer than the %d clients", o.Events, n)
	}
	out := make([]workload.Options, n)
	for k := range out {
		c := o
		c.ExtraPercentiles = append([]float64(nil), o.ExtraPercentiles...)
		c.IgnoreErrors = append([]uint16(nil), o.IgnoreErrors...)
		c.Threads = share(o.Threads, n, k)
		c.Rate = share(o.Rate, n, k)
		c.Events = int64(share(int(o.Events), n, k))
		if o.RandSeed != 0 {
			c.RandSeed = o.RandSeed + int64(k)
		}
		out[k] = c
	}
	return out, nil
}

// share is client k's part of total over n clients, the remainder to the first ones.
func share(total, n, k int) int {
	s := total / n
	if k < total%n {
		s++
	}
	return s
}
