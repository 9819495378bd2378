package links

import "github.com/habench/habench/cluster"

// State is what a cluster's links are now, read once for status and netem show.
type State struct {
	// Standing is the record of a `netem apply` (nil when there is none); Err says the
	// record exists but cannot be read.
	Standing *Standing
	Err      error
	// Applying: a `netem apply` or `netem clear` is working on the cluster now.
	Applying bool
	// RunActive: a run with its own links (--links, scenario links) impairs them now, its
	// impairments ending with it (meaningful when Standing is nil).
	RunActive bool
	// Alive: the standing impairments are in effect as far as processes go (Standing.Alive;
	// false without a record).
	Alive bool
	// Impairable: the cluster's provider can impair its links at all (c.Links() is not
	// cluster.LinksNone).
	Impairable bool
}

// StateOf reads cluster c's link state: its standing record, the locks of an apply and of
// a run with links, and whether the standing impairments' process runs.
func StateOf(c *cluster.Cluster) State {
	st, err := ReadStanding(c)
	s := State{Standing: st, Err: err, Applying: ApplyInProgress(c), RunActive: RunLinksActive(c), Impairable: c.Links() != cluster.LinksNone}
	if st != nil {
		s.Alive = st.Alive(c)
	}
	return s
}
