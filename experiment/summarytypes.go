package experiment

import "github.com/habench/habench/schema"

// The sections of summary.json are declared once, in package results, which the report
// package reads them with; these names keep the writer's code short.
type (
	Summary            = schema.Summary
	NodeLag            = schema.NodeLag
	SemiSyncSummary    = schema.SemiSyncSummary
	SemiSyncOff        = schema.SemiSyncOff
	OutageSummary      = schema.OutageSummary
	WaitSummary        = schema.WaitSummary
	MoveSummary        = schema.MoveSummary
	RateSummary        = schema.RateSummary
	ProbeSummary       = schema.ProbeSummary
	NodeState          = schema.NodeState
	Window             = schema.Window
	GroupMemberSummary = schema.GroupMemberSummary
	GaleraNodeSummary  = schema.GaleraNodeSummary
	HostSummary        = schema.HostSummary
	NodeConvergence    = schema.NodeConvergence
	Convergence        = schema.Convergence
	FaultSummary       = schema.FaultSummary
	FaultDuring        = schema.FaultDuring
	HostInfo           = schema.HostInfo
)

// Convergence states of a node after a run (schema.NodeConvergence.State).
const (
	Converged = schema.Converged
	Behind    = schema.Behind
	Diverged  = schema.Diverged
	Down      = schema.Down
)
