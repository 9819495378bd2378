package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// writeJSONAtomic writes v to path through a temporary file and a rename, so a crash
// never leaves half a sweep.json.
// The error names path.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o640)
}

// ScenarioSHA256 is the hex SHA-256 of a scenario file's bytes.
func ScenarioSHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// newSweepFile is the record of a fresh run of plan: every cell pending.
func newSweepFile(p *scenario.Plan, raw []byte) *schema.SweepFile {
	s := p.Scenario
	f := &schema.SweepFile{Format: schema.SweepFormat, Scenario: s.Name, Description: strings.TrimSpace(s.Description),
		ScenarioFile: "scenario.yaml", ScenarioSHA256: ScenarioSHA256(raw), Scale: p.Scale,
		Workload: s.Workload.Test, WorkloadOptions: workload.OptionValues(p.Options), Policy: p.Policy.Record()}
	if p.Compared() {
		f.Baseline = p.Baseline()
	}
	for _, a := range p.Axes {
		f.Axes = append(f.Axes, schema.SweepAxis{Name: a.Name, Kind: a.Kind, Values: a.Labels(), Variables: a.Variables(), Reference: a.Reference, Inert: p.Inert(a)})
	}
	for _, c := range p.Cells {
		sp := c.Deployment.Spec
		rec := schema.CellRecord{Index: c.Index, Axes: c.Values, Topology: c.Topology, Kind: string(sp.Kind), Flavor: string(sp.Flavor),
			Test: c.Test, Threads: c.Options.Threads, Links: linksLabel(c.Links), Repeat: c.Repeat, Status: schema.StatusPending}
		if c.Reuse != nil {
			rec.Status, rec.ReusedFrom, rec.Links = schema.StatusReused, c.Reuse.Index, "none"
		}
		for _, as := range append(slices.Clone(c.ServerOptions), c.Knobs...) {
			for _, st := range as.Settings {
				if rec.Requested == nil {
					rec.Requested = map[string]string{}
				}
				rec.Requested[st.Name] = st.Value
			}
		}
		f.Cells = append(f.Cells, rec)
	}
	return f
}

func linksLabel(r netem.Request) string {
	if r.IsZero() {
		return "none"
	}
	if (netem.Request{All: r.All}).String() == r.String() {
		return r.All
	}
	return r.String()
}

// sweepMatches checks that a sweep.json describes the same grid as plan (same file, same
// scale, same habench grid rules).
func sweepMatches(f *schema.SweepFile, p *scenario.Plan) error {
	if len(f.Cells) != len(p.Cells) {
		return fmt.Errorf("sweep.json has %d cells, the scenario at scale %s has %d", len(f.Cells), p.Scale, len(p.Cells))
	}
	for i, c := range p.Cells {
		if !maps.Equal(f.Cells[i].Axes, c.Values) || f.Cells[i].Index != c.Index {
			return fmt.Errorf("cell %d is %v in sweep.json, %v in the scenario", c.Index, f.Cells[i].Axes, c.Values)
		}
	}
	return nil
}

// ResumePlan is the plan at scale ("" = full, or the directory's scale when resuming) and,
// when dir is not "", the sweep.json of the directory being resumed, checked the way
// `habench run --resume` checks it before anything is deployed: dir must hold a sweep.json
// written with this very scenario file (same SHA-256), at the same scale, with the same
// grid. Errors are *topology.FieldError naming --resume or --scale (bad input).
func ResumePlan(s *scenario.Scenario, dir, scale string) (*scenario.Plan, *schema.SweepFile, error) {
	var file *schema.SweepFile
	if dir != "" {
		var err error
		if file, err = schema.ReadSweep(dir); err != nil {
			return nil, nil, &topology.FieldError{Field: "--resume", Value: dir, Reason: "not a sweep directory: " + err.Error()}
		}
		if sum := ScenarioSHA256(s.Raw()); sum != file.ScenarioSHA256 {
			return nil, nil, &topology.FieldError{Field: "--resume", Value: dir, Reason: fmt.Sprintf(
				"it was run with another scenario file (sha256 %.12s, this one %.12s); resume with its copy: habench run %s --resume %s",
				file.ScenarioSHA256, sum, filepath.Join(dir, file.ScenarioFile), dir)}
		}
		if scale == "" {
			scale = file.Scale
		}
		if scale != file.Scale {
			return nil, nil, &topology.FieldError{Field: "--scale", Value: scale, Reason: fmt.Sprintf("%s was run at scale %s; resume at the same scale", dir, file.Scale)}
		}
	}
	plan, err := s.Plan(scale)
	if err != nil {
		return nil, nil, err
	}
	plan.Failover = planFailover(plan)
	if file != nil {
		if err := sweepMatches(file, plan); err != nil {
			return nil, nil, &topology.FieldError{Field: "--resume", Value: dir, Reason: err.Error()}
		}
	}
	return plan, file, nil
}

// cellsToRun reports whether a cell runs in this invocation: not reused from another,
// and not done in the run being resumed (file; nil: a fresh run).
func cellsToRun(file *schema.SweepFile) func(*scenario.Cell) bool {
	return func(c *scenario.Cell) bool {
		return c.Reuse == nil && (file == nil || file.Cells[c.Index-1].Status != schema.StatusDone)
	}
}
