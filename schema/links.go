package schema

import "time"

// LinkImpairment is what manifest.json records of the links: the backend, the one-way
// impairment of every directed link, and per pair the round trip measured over the plain
// bridge before applying (base), the round trip requested (sum of both directions' delays)
// and the one achieved after applying, all in milliseconds (TCP handshakes from inside the
// namespaces, median and p99).
type LinkImpairment struct {
	Backend string            `json:"backend"`
	Links   map[string]string `json:"links"` // "n1->n2": "delay 600us"
	// Request is the request in `habench netem apply` form ("--all 0.6ms").
	Request string `json:"request,omitempty"`
	// AppliedBy is "run" (applied for this run and removed after it) or "netem apply"
	// (standing impairments of the cluster, applied before the run by another command).
	AppliedBy string `json:"applied_by,omitempty"`
	// LinkThread is the userspace link thread's scheduling class: "SCHED_FIFO" (real-time,
	// the default where permitted) or "SCHED_OTHER" (not permitted, or HABENCH_NETEM_RT=0).
	LinkThread string    `json:"link_thread,omitempty"`
	Applied    time.Time `json:"applied,omitempty"`
	RTT        []LinkRTT `json:"rtt"`
	Warnings   []string  `json:"warnings,omitempty"`
	// Note says which pairs were not compared with the request: rate-limited (a rate
	// limit adds serialization time to every handshake packet) or lossy ones.
	Note string `json:"note,omitempty"`
}

// LinkRTT is one directed pair's round trips in milliseconds. A partitioned pair has
// no achieved values: Samples 0 and Failed > 0 are the proof that it is cut.
type LinkRTT struct {
	Link         string  `json:"link"`
	BaseMs       float64 `json:"base_ms"`
	RequestedMs  float64 `json:"requested_ms"`
	AchievedMs   float64 `json:"achieved_median_ms"`
	AchievedP99  float64 `json:"achieved_p99_ms"`
	AddedMs      float64 `json:"added_ms"` // achieved - base
	Samples      int     `json:"samples"`
	FailedProbes int     `json:"failed"`
	// Partitioned: no packet gets through one way or the other (partition, 100% loss).
	Partitioned bool `json:"partitioned,omitempty"`
	// Lossy: some loss; the handshake times include SYN retransmissions and are not
	// compared with the request.
	Lossy bool `json:"lossy,omitempty"`
	// RateLimited: a rate limit one way or the other; the handshake times include the
	// serialization time of its packets and are not compared with the request either.
	RateLimited bool `json:"rate_limited,omitempty"`
}

// Change is a change of a cluster's standing links (`habench netem apply` / `clear`
// from another command) while a run was going on: manifest.json "link_changes". The
// partitions and heals of faults (the run's own schedule or `habench fault`) are not
// link changes but faults (experiment filters them out of a run's link changes).
type LinkChange struct {
	// AtS is when it happened in seconds on samples.csv's clock: for "applied" the
	// record's applied time (the impairments took effect about then), for "cleared" when
	// the run noticed the record gone (within linkWatchEvery of the clear).
	AtS float64 `json:"at_s"`
	// Event is "applied" or "cleared".
	Event string `json:"event"`
	// Request is the `habench netem apply` request, e.g. "--partition n3".
	Request string `json:"request"`
	Backend string `json:"backend,omitempty"`
}
