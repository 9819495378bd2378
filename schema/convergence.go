package schema

// Convergence states of a node after a run (NodeConvergence.State).
const (
	// Converged: the node has the writer's GTID position and the same rows in every
	// benchmark table (CHECKSUM TABLE).
	Converged = "converged"
	// Behind: it did not reach the writer's position within the catch-up timeout, or
	// stopped trying (its applier stopped, it left the group or the Primary component).
	Behind = "behind"
	// Diverged: it has the writer's position but other rows in some tables.
	Diverged = "diverged"
	// Down: it did not answer for 3 s.
	Down = "down"
)

// NodeConvergence is one node's state after a run's catch-up.
type NodeConvergence struct {
	Node  string `json:"node"`
	State string `json:"state"`
	// Position is its GTID position (MariaDB gtid_binlog_pos on Galera) when it answered.
	Position string `json:"position,omitempty"`
	// Tables are the benchmark tables whose CHECKSUM TABLE differs from the writer's
	// (Diverged).
	Tables []string `json:"tables,omitempty"`
	// Reason says why it is Behind or Down.
	Reason string `json:"reason,omitempty"`
}

// Convergence is the check after a run: every node's state against the writer's.
type Convergence struct {
	// Writer is the reference node (the writer when the run ended).
	Writer string            `json:"writer"`
	Nodes  []NodeConvergence `json:"nodes"`
	// CheckedTables is how many benchmark tables were compared by checksum.
	CheckedTables int `json:"checked_tables"`
	// TookS is how long the catch-up and the checks took.
	TookS float64 `json:"took_s"`
}

// OK reports whether every node converged.
func (cv *Convergence) OK() bool {
	for _, n := range cv.Nodes {
		if n.State != Converged {
			return false
		}
	}
	return true
}

// Positions returns node -> GTID position of the nodes that answered.
func (cv *Convergence) Positions() map[string]string {
	m := map[string]string{}
	for _, n := range cv.Nodes {
		if n.Position != "" {
			m[n.Node] = n.Position
		}
	}
	return m
}
