package schema

// History files a run with a checker workload writes (see package history).
const (
	// HistoryFile is history.jsonl: one JSON object per operation of the checker
	// workload (index, process, session, node, start_ns, end_ns, value, outcome, error).
	HistoryFile = "history.jsonl"
	// HistoryEDNFile is the same history in the EDN format Jepsen's Elle reads.
	HistoryEDNFile = "history.edn"
	// ProbeHistoryFile is probe-history.jsonl: the probe writer's history, one
	// operation per line as in HistoryFile: each commit an append of its seq to key 0,
	// the final read on the writer after the run a read of every seq present
	// (ProbeSummary's counts are checker.FinalReadLoss of it).
	ProbeHistoryFile = "probe-history.jsonl"
)

// ChecksSummary is summary.json's "checks": what the checker workload ran beside (or
// instead of) the benchmark and what its checks found in the history.
type ChecksSummary struct {
	// Workload is the checker workload, e.g. "register"; Node the nodes its sessions ran
	// on, round-robin ("n1", "n1,n2,n3"), at the start when FollowsWriter (the sessions
	// moved with the writer, as the workload's workers do; each operation's node is in
	// the history); Threads, Keys, Locking and Isolation its settings.
	Workload      string `json:"workload"`
	Node          string `json:"node"`
	FollowsWriter bool   `json:"follows_writer,omitempty"`
	Threads       int    `json:"threads"`
	Keys          int    `json:"keys"`
	Locking       string `json:"locking,omitempty"`
	Isolation     string `json:"isolation,omitempty"`
	// Ops counts the history's operations; OK, Failed and Unknown by outcome (unknown:
	// the connection died after COMMIT was sent).
	Ops     int `json:"ops"`
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
	// Valid is the verdict: true when no check found an anomaly.
	Valid bool `json:"valid"`
	// AnomalyCount counts the anomalies found; LostUpdates the committed updates that
	// lost-update anomalies (P4) overwrote unseen.
	AnomalyCount int `json:"anomaly_count"`
	LostUpdates  int `json:"lost_updates"`
	// AnomalyTypes counts the anomalies by type ("lost-update", "wrong-total",
	// "negative-balance").
	AnomalyTypes map[string]int `json:"anomaly_types,omitempty"`
	// Anomalies are the first (up to 20) anomalies, each with its explanation.
	Anomalies []AnomalySummary `json:"anomalies,omitempty"`
	// History is the history file the checks read (HistoryFile).
	History string `json:"history"`
	// Error is why the checker workload could not run or be checked ("" when it was).
	Error string `json:"error,omitempty"`
}

// AnomalySummary is one anomaly: its type (e.g. "lost-update"), the key and version
// (a bank's wrong-total: key 0 and the sum read; negative-balance: the account and balance),
// the operations involved (their indexes in the history) and the explanation.
type AnomalySummary struct {
	Type        string `json:"type"`
	Key         int64  `json:"key"`
	Version     int64  `json:"version"`
	Ops         []int  `json:"ops"`
	Explanation string `json:"explanation"`
}
