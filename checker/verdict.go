package checker

import (
	"github.com/habench/habench/history"
)

// Verdict is the result of the checks on one history (summary.json's "checks").
type Verdict struct {
	// Workload is the checker workload that made the history, e.g. "register".
	Workload string `json:"workload"`
	// Ops, OK, Failed and Unknown count the history's operations by outcome.
	Ops     int `json:"ops"`
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
	// Valid is true when no check found an anomaly.
	Valid bool `json:"valid"`
	// LostUpdates is how many committed updates were overwritten unseen (for each
	// lost-update anomaly, its operations less one).
	LostUpdates int `json:"lost_updates"`
	// Anomalies lists each anomaly found, with its operations and explanation.
	Anomalies []Anomaly `json:"anomalies"`
}

// CheckRegister runs the register checks (today: lost updates, P4) on ops.
func CheckRegister(ops []history.Op) Verdict {
	v := Verdict{Workload: "register", Ops: len(ops)}
	countOutcomes(&v, ops)
	v.Anomalies = LostUpdates(ops)
	if v.Anomalies == nil {
		v.Anomalies = []Anomaly{}
	}
	for _, a := range v.Anomalies {
		if a.Type == "lost-update" {
			v.LostUpdates += len(a.Ops) - 1
		}
	}
	v.Valid = len(v.Anomalies) == 0
	return v
}
