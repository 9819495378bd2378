package report

import (
	"fmt"
	"strings"
)

// NodeLagFigure is one node's visibility lag over a window: MaxS the largest lag sampled
// (seconds; nil when none was sampled) and UnknownS how long, in seconds, its lag could not
// be measured (the node could not be read, or was outside the group or the Primary
// component). The one shape every lag column is computed from (summary.json's nodes,
// the comparison, sweep cells, the Faults table's peak lag).
type NodeLagFigure struct {
	Node     string
	MaxS     *float64
	UnknownS float64
}

// MaxLag is the largest lag over nodes and, when some node's lag was unknown for a while,
// what MaxS cannot see: "n1 unknown for 22 s, n3 unknown for 9 s" (node order). max is nil
// when no node has a lag sample; unknown is "" when every lag was measured all along.
func MaxLag(nodes []NodeLagFigure) (max *float64, unknown string) {
	var parts []string
	for _, n := range nodes {
		if n.MaxS != nil && (max == nil || *n.MaxS > *max) {
			v := *n.MaxS
			max = &v
		}
		if n.UnknownS > 0 {
			parts = append(parts, n.Node+" "+UnknownFor(n.UnknownS))
		}
	}
	return max, strings.Join(parts, ", ")
}

// UnknownFor is "unknown for 22 s" (whole seconds; "unknown for 0.5 s" under one second).
func UnknownFor(s float64) string {
	if s < 1 {
		return fmt.Sprintf("unknown for %.1f s", s)
	}
	return fmt.Sprintf("unknown for %.0f s", s)
}

// LagText renders a lag figure for a table cell with format (e.g. "%.3f"): the number
// alone when unknown is "", else "≥ 7.800 (n1 unknown for 22 s)" (the lag while it was
// unknown may have been larger), "n/a (n1 unknown for 22 s)" without any lag sample. A
// clean-looking number is never shown for a lag that was not measured all along.
func LagText(max *float64, unknown, format string) string {
	num := "n/a"
	if max != nil {
		num = fmt.Sprintf(format, *max)
	}
	if unknown == "" {
		return num
	}
	if max != nil {
		num = "≥ " + num
	}
	return num + " (" + unknown + ")"
}

// NodeLagText is one node's lag cell: LagText with "unknown for N s" when unknownS > 0.
func NodeLagText(max *float64, unknownS float64, format string) string {
	u := ""
	if unknownS > 0 {
		u = UnknownFor(unknownS)
	}
	return LagText(max, u, format)
}

// lagUnknownS is node's lag_unknown_s in r's summary.json (0 without it).
func lagUnknownS(r *Run, node string) float64 {
	if r.Summary == nil {
		return 0
	}
	for _, n := range r.Summary.Nodes {
		if n.Node == node {
			return n.LagUnknownS
		}
	}
	return 0
}
