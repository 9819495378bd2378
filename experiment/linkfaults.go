package experiment

import (
	"slices"
	"time"

	"github.com/habench/habench/schema"
)

// faultLinkSlack is how far a link change may lie outside its fault's action (At to
// At + Took, on samples.csv's clock) and still be the fault's: the watch notices a
// clear within the watch's 200 ms period (links.StartWatch), later on a loaded host.
const faultLinkSlack = time.Second

// byOthers returns changes without those a partition (applied) or heal (cleared) among
// faults made while it ran: the run's own scenario faults and `habench fault`'s are in
// the manifest's faults and their warning, never links changed "from another command".
func byOthers(changes []schema.LinkChange, faults []schema.RunFault) []schema.LinkChange {
	var out []schema.LinkChange
	for _, c := range changes {
		if !slices.ContainsFunc(faults, func(f schema.RunFault) bool { return madeBy(c, f) }) {
			out = append(out, c)
		}
	}
	return out
}

// madeBy: link change c is fault f's (its FaultAction.LinkEvent, e.g. a partition
// applied or a heal cleared, while f ran).
func madeBy(c schema.LinkChange, f schema.RunFault) bool {
	event := ""
	if a := FaultActionOf(f.Action); a != nil {
		event = a.LinkEvent
	}
	slack := faultLinkSlack.Seconds()
	return event == c.Event && c.AtS >= f.AtS-slack && c.AtS <= f.AtS+f.Took+slack
}
