package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SweepFile is the file a sweep directory holds its points in (a JSON array of
// SweepPoint). WriteSweepPoints writes it; Load reads it.
const SweepFile = "sweep_points.json"

// SweepPoint is one cell of a sweep as the curves need it: which topology, which axis was
// swept and to what value (as read back from the server, or the workload option that
// ran), and the cell's TPS and p95 latency. The sweep code fills one per cell.
//
// Curves: for each Axis one chart of TPS and one of p95 against Value, one line per
// Topology (and per distinct Fixed, when other axes vary too). Values that all parse as
// numbers are placed on a numeric X axis; otherwise the values are categories in the
// order they first appear.
type SweepPoint struct {
	// Topology names the line (a topology's name).
	Topology string `json:"topology"`
	// Axis is the swept parameter: a workload option ("threads") or a server variable
	// ("wsrep_slave_threads").
	Axis string `json:"axis"`
	// Value is the axis value in effect, as read back ("16", "ON", "268435456").
	Value string `json:"value"`
	// TPS is transactions per second over the cell's run.
	TPS float64 `json:"tps"`
	// P95Ms is the cell's 95th percentile latency in milliseconds.
	P95Ms float64 `json:"p95_ms"`
	// Fixed are the other axes' values in this cell (optional): points that differ in
	// Fixed are on different lines.
	Fixed map[string]string `json:"fixed,omitempty"`
	// Dir is the cell's run directory, relative to the sweep directory (optional).
	Dir string `json:"dir,omitempty"`
	// Capacity and FailoverS are a capacity search's sustained rate (events per second)
	// and failover time (s) at that rate, means over the repeats (nil without a search,
	// or when not measured): drawn in the chart "capacity against AXIS".
	Capacity  *float64 `json:"capacity_rate,omitempty"`
	FailoverS *float64 `json:"failover_s,omitempty"`
	// Error is why the cell did not complete ("" when it did); such points are listed
	// but not drawn.
	Error string `json:"error,omitempty"`
	// With repeats (written since the sweeps summarise them): N runs summarised, TPS is
	// their mean, TPSMin/TPSMax the range, TPSCILo/TPSCIHi the 95% CI of the mean (nil
	// with N < 2), P95Ms the mean p95. N 0: a point of an older sweep, one run.
	N       int      `json:"n,omitempty"`
	TPSMin  float64  `json:"tps_min,omitempty"`
	TPSMax  float64  `json:"tps_max,omitempty"`
	TPSCILo *float64 `json:"tps_ci95_lo,omitempty"`
	TPSCIHi *float64 `json:"tps_ci95_hi,omitempty"`
	// Reference is the axis value the point is compared with; VsRef the TPS change from
	// it as the curves label it ("+3.2%", "-1.0% (within noise)", "ref"), VsRefPct the
	// percentage of the reference's mean (nil without one).
	Reference string   `json:"reference,omitempty"`
	VsRef     string   `json:"vs_reference,omitempty"`
	VsRefPct  *float64 `json:"vs_reference_pct,omitempty"`
	// ReusedFrom is set when the point was not run: the axis cannot change this topology
	// (links on a single node) and the runs of the cell it names stand for it.
	ReusedFrom string `json:"reused_from,omitempty"`
	// Mark: VsRef compares CPU-bound cells or has no CI (set by Render, shown ⚠).
	Mark bool `json:"-"`
}

// WriteSweepPoints writes points to dir/sweep_points.json (indented JSON). Error:
// *WriteError naming the file.
func WriteSweepPoints(dir string, points []SweepPoint) error {
	p := filepath.Join(dir, SweepFile)
	b, err := json.MarshalIndent(points, "", "  ")
	if err != nil {
		return &WriteError{Path: p, Err: err}
	}
	if err := os.WriteFile(p, append(b, '\n'), 0o640); err != nil {
		return &WriteError{Path: p, Err: err}
	}
	return nil
}

// ReadSweepPoints reads dir/sweep_points.json. Error (*LoadError) when it is missing or
// malformed, or a point lacks its topology, axis or value.
func ReadSweepPoints(dir string) ([]SweepPoint, error) {
	path := filepath.Join(dir, SweepFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	var pts []SweepPoint
	if err := json.Unmarshal(b, &pts); err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	for i, p := range pts {
		switch {
		case p.Topology == "":
			return nil, &LoadError{Path: path, Reason: fmt.Sprintf("point %d: no topology", i)}
		case p.Axis == "":
			return nil, &LoadError{Path: path, Reason: fmt.Sprintf("point %d: no axis", i)}
		case p.Value == "":
			return nil, &LoadError{Path: path, Reason: fmt.Sprintf("point %d: no value", i)}
		}
	}
	return pts, nil
}

// curve is one line of a sweep chart.
type curve struct {
	label  string
	points []SweepPoint
}

// sweepAxes groups points by axis (in first-seen order), then by line.
func sweepAxes(pts []SweepPoint) (axes []string, lines map[string][]curve) {
	lines = map[string][]curve{}
	idx := map[string]map[string]int{}
	for _, p := range pts {
		if _, ok := idx[p.Axis]; !ok {
			axes = append(axes, p.Axis)
			idx[p.Axis] = map[string]int{}
		}
		label := p.Topology
		if len(p.Fixed) > 0 {
			var kv []string
			for k, v := range p.Fixed {
				kv = append(kv, k+"="+v)
			}
			sort.Strings(kv)
			label += " (" + strings.Join(kv, ", ") + ")"
		}
		i, ok := idx[p.Axis][label]
		if !ok {
			i = len(lines[p.Axis])
			idx[p.Axis][label] = i
			lines[p.Axis] = append(lines[p.Axis], curve{label: label})
		}
		lines[p.Axis][i].points = append(lines[p.Axis][i].points, p)
	}
	return axes, lines
}

// axisPositions maps an axis's values to X positions: the numbers themselves when every
// value parses as one (numeric true), else category positions 0, 1, ... in first-seen
// order with their labels.
func axisPositions(cs []curve) (pos map[string]float64, labels []string, numeric bool) {
	pos = map[string]float64{}
	numeric = true
	var order []string
	for _, c := range cs {
		for _, p := range c.points {
			if _, ok := pos[p.Value]; ok {
				continue
			}
			pos[p.Value] = 0
			order = append(order, p.Value)
			if _, err := strconv.ParseFloat(p.Value, 64); err != nil {
				numeric = false
			}
		}
	}
	for i, v := range order {
		if numeric {
			pos[v], _ = strconv.ParseFloat(v, 64)
		} else {
			pos[v] = float64(i)
		}
	}
	if !numeric {
		labels = order
	}
	return pos, labels, numeric
}
