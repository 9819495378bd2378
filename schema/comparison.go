package schema

import "github.com/habench/habench/stats"

// ComparisonName is the name of a scenario run's comparison rows in its directory.
const ComparisonName = "comparison.json"

// ComparisonRow is one run's line in a scenario run's comparison (comparison.json is a
// JSON array of them): a topology, in a sweep one cell.
type ComparisonRow struct {
	Topology string `json:"topology"`
	// Cell is the sweep cell's index (1-based); Axes its other axes' values (the group
	// whose rows are compared with each other), absent without a sweep.
	Cell    int               `json:"cell,omitempty"`
	Axes    map[string]string `json:"axes,omitempty"`
	Kind    string            `json:"kind"`
	Flavor  string            `json:"flavor"`
	Version string            `json:"version"`
	Dir     string            `json:"dir"`
	Summary *Summary          `json:"summary"`
	// TPSvsBase and LatVsBase are percentages of the baseline topology's value in the
	// same group (100 = same; 0 without a baseline), of the point's means (see Stats).
	TPSvsBase float64  `json:"tps_vs_baseline_pct"`
	LatVsBase float64  `json:"latency_vs_baseline_pct"`
	MaxLagS   *float64 `json:"max_replica_lag_s"` // null without replicas or lag samples
	// LagUnknown names the nodes whose lag could not be measured for a while ("n3 unknown
	// for 9 s"; report.MaxLag): MaxLagS cannot see those seconds.
	LagUnknown string  `json:"lag_unknown,omitempty"`
	DeploySecs float64 `json:"deploy_s"`
	// Error is why this topology's run did not complete (interrupted, failed), "" if it did.
	Error string `json:"error,omitempty"`
	// Note qualifies the row: "repeat 2", "1 node, no links" (a single node in a links
	// group runs without links).
	Note string `json:"note,omitempty"`
	// Stats is the row's point of the grid (its cell and the cell's repeats): TPS and
	// latency as mean, min-max, 95% CI, and the changes against the baseline and along
	// each axis. TPSvsBase and LatVsBase are the point's (mean against mean), the same on
	// every repeat's row.
	Stats *stats.Cell `json:"cell_stats,omitempty"`
	// ReusedFrom is set on the row of a cell that was not run because it cannot differ
	// from the cell of this group (a single node under a links axis): Dir is empty, Stats
	// are that cell's.
	ReusedFrom string `json:"reused_from,omitempty"`
	// LinksControl and LinkAddedMs are the cell record's (a same-path control cell).
	LinksControl string   `json:"links_control,omitempty"`
	LinkAddedMs  *float64 `json:"link_added_rtt_ms,omitempty"`

	// Group is the row's values of the axes compared across (stats.GroupOf: "name=value
	// ..." in axis order, all axes but topology and repeat): the rows compared with each
	// other. Not in comparison.json.
	Group string `json:"-"`
}
