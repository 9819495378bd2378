package schema

// ProxyEventsFile is the results file of a proxy's state changes (ProxyEvent rows).
const ProxyEventsFile = "proxy_events.csv"

// ProxyPollMs is how often a run reads its proxy's state, in milliseconds.
const ProxyPollMs = 100

// ProxyEvent is one change of a proxy backend server's state as the run read it
// (proxy_events.csv; every ProxyPollMs, so each time is late by up to that).
type ProxyEvent struct {
	// AtS is the time on samples.csv's clock, in seconds.
	AtS float64 `json:"at_s"`
	// Endpoint is the proxy's endpoint: "write" or "read".
	Endpoint string `json:"endpoint"`
	// Server is the node the proxy passes connections to.
	Server string `json:"server"`
	// Status is the proxy's word for the server: HAProxy's "UP", "DOWN", "UP 1/3" (a
	// check failed, still up), "DOWN 1/2" (a check passed, still down), "MAINT", "no check".
	Status string `json:"status"`
	// Serving is true for the server the endpoint sends new connections to (the write
	// endpoint's first server UP; every server UP of the read endpoint).
	Serving bool `json:"serving"`
	// Sessions are the server's current sessions through the proxy.
	Sessions int `json:"sessions"`
}

// ProxySummary is summary.json's "proxy": what the run's proxy did.
type ProxySummary struct {
	// Type is the proxy (topology.ProxySpec.Type); CheckIntervalMs, Fall and Rise its
	// health checks as configured.
	Type            string  `json:"type"`
	CheckIntervalMs float64 `json:"check_interval_ms"`
	Fall            int     `json:"fall"`
	Rise            int     `json:"rise"`
	// Polls and PollErrors count the reads of its state (every ProxyPollMs); Events the
	// changes recorded in ProxyEventsFile.
	Polls      int `json:"polls"`
	PollErrors int `json:"poll_errors,omitempty"`
	Events     int `json:"events"`
	// WriteServers are the write endpoint's servers in order, as they served it (the
	// first at the start; repeated when it went back).
	WriteServers []string `json:"write_servers,omitempty"`
	// NoWriterS is how long the write endpoint had no server UP, in seconds.
	NoWriterS float64 `json:"no_writer_s"`
	// CPUCores is the proxy process's mean CPU in cores over the samples (nil: not sampled).
	CPUCores *float64 `json:"cpu_cores,omitempty"`
	// Error is why the state could not be read at all ("" when it could).
	Error string `json:"error,omitempty"`
}

// FaultProxy is a fault as the proxy saw it (FaultSummary.Proxy), in seconds from the fault.
type FaultProxy struct {
	// Server is the write endpoint's server at the fault.
	Server string `json:"server"`
	// DownS is when the proxy marked it DOWN (nil: it did not before the run ended or the
	// node's next fault).
	DownS *float64 `json:"down_s"`
	// SessionsAtDown are its sessions through the proxy when it was marked DOWN (as the last
	// read before that saw them: HAProxy closes them as it marks it), LeftS when they were
	// gone (the proxy closed them, or the clients left; nil: never).
	SessionsAtDown int      `json:"sessions_at_down"`
	LeftS          *float64 `json:"left_s"`
	// NewServer is the next server the write endpoint sent connections to, NewServerS when
	// (nil: none before the end).
	NewServer  string   `json:"new_server,omitempty"`
	NewServerS *float64 `json:"new_server_s"`
	// StaleCommits, when the probe writer went through the proxy (ProbeSummary.Via), counts
	// its stale commits that count for this fault (those after it and before the next
	// fault; ProbeSummary.StaleCommits): commits acknowledged by a node the cluster's own
	// view no longer counted as the writer. 0 is a check that found none; nil: not checked
	// (the probe did not go through the proxy, or habench did not see the view around the
	// fault: no poll named a writer after it, no membership samples of the other nodes
	// before and after it; a NOTE says which). StaleOn are the nodes that acknowledged
	// them, in order of their first.
	StaleCommits *int64   `json:"stale_commits,omitempty"`
	StaleOn      []string `json:"stale_on,omitempty"`
}
