package experiment

import (
	"fmt"
	"strings"

	"github.com/habench/habench/knob"
)

// knobsSection renders the run's knobs for report.md: per node the value before, the
// value the server took, and the value read back after restoring.
func knobsSection(k *knob.Report) string {
	var b strings.Builder
	b.WriteString("\n## Knobs (set for the run, read back from each server)\n\n")
	fmt.Fprintf(&b, "Requested: `%s`. ", strings.Join(k.Requested, " "))
	switch {
	case k.Keep:
		b.WriteString("Kept after the run.\n\n")
	case k.Restored == nil:
		b.WriteString("**Not restored.**\n\n")
	case *k.Restored:
		b.WriteString("Restored after the run (every value read back equal to its value before).\n\n")
	default:
		b.WriteString("**Restoring failed: see `habench knob restore`.**\n\n")
	}
	b.WriteString("| node | knob | variable | how | before | effective | restored | note |\n|---|---|---|---|---|---|---|---|\n")
	for _, v := range k.Nodes {
		r := ""
		if v.Restored != nil {
			r = *v.Restored
		}
		eff := v.Effective
		if !v.Matches {
			eff = "**" + eff + "**"
		}
		fmt.Fprintf(&b, "| %s | %s=%s | %s | %s | %s | %s | %s | %s |\n", v.Node, v.Knob, v.Requested, v.Variable, v.Method, v.Before, eff, r, v.Note)
	}
	for _, n := range k.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	return b.String()
}
