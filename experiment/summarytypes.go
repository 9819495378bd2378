package experiment

import "github.com/habench/habench/results"

// The sections of summary.json are declared once, in package results, which the report
// package reads them with; these names keep the writer's code short.
type (
	Summary            = results.Summary
	NodeLag            = results.NodeLag
	SemiSyncSummary    = results.SemiSyncSummary
	SemiSyncOff        = results.SemiSyncOff
	OutageSummary      = results.OutageSummary
	WaitSummary        = results.WaitSummary
	MoveSummary        = results.MoveSummary
	RateSummary        = results.RateSummary
	ProbeSummary       = results.ProbeSummary
	NodeState          = results.NodeState
	Window             = results.Window
	GroupMemberSummary = results.GroupMemberSummary
	GaleraNodeSummary  = results.GaleraNodeSummary
	HostSummary        = results.HostSummary
	NodeConvergence    = results.NodeConvergence
	Convergence        = results.Convergence
	FaultSummary       = results.FaultSummary
	FaultDuring        = results.FaultDuring
	HostInfo           = results.HostInfo
)

// Convergence states of a node after a run (results.NodeConvergence.State).
const (
	Converged = results.Converged
	Behind    = results.Behind
	Diverged  = results.Diverged
	Down      = results.Down
)
