package console

import (
	"cmp"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

// The findings and actions tables of a job's and a finding's page (parts.html:
// findingRows, actionRows), each sorted and paged in memory under its own
// parameters.

// episodeCols are the columns of a page's findings table.
var episodeCols = []sortCol{
	{Key: "kind", Label: "Kind"}, {Key: "severity", Label: "Severity"}, {Key: "state", Label: "State"},
	{Key: "job", Label: "Job"}, {Key: "team", Label: "Team"}, {Key: "gpus", Label: "GPUs", Desc: true},
	{Key: "since", Label: "Since", Desc: true}, {Key: "waste", Label: "Waste GPU-h", Num: true, Desc: true},
	{Key: "cost", Label: "Waste", Num: true, Desc: true},
}

// actionCols are the columns of a page's actions table.
var actionCols = []sortCol{
	{Key: "time", Label: "Time", Desc: true}, {Key: "decision", Label: "Decision"}, {Key: "outcome", Label: "Outcome"},
	{Key: "job", Label: "Job"}, {Key: "team", Label: "Team"}, {Key: "finding", Label: "Finding"}, {Key: "policy", Label: "Policy"},
}

var (
	jobFindingsTable = &tableDef{name: "job-findings", prefix: "findings_", id: "job-findings", sort: "since", desc: true, cols: episodeCols}
	jobActionsTable  = &tableDef{name: "job-actions", prefix: "actions_", id: "job-actions", sort: "time", desc: true, cols: actionCols}
	// A finding's page: the actions on it, and its episodes.
	findingActionsTable = &tableDef{name: "finding-actions", prefix: "actions_", id: "finding-actions", sort: "time", desc: true, cols: actionCols}
	episodesTable       = &tableDef{name: "episodes", prefix: "episodes_", id: "episodes", sort: "since", desc: true, cols: episodeCols}
)

var episodeCmps = map[string]func(a, b schemas.Finding) int{
	"kind":     byStr(func(f schemas.Finding) string { return string(f.Kind) }),
	"severity": byStr(func(f schemas.Finding) string { return string(f.Severity) }),
	"state":    byStr(func(f schemas.Finding) string { return string(f.State) }),
	"job":      byStr(func(f schemas.Finding) string { return f.Job }),
	"team":     byStr(func(f schemas.Finding) string { return f.Team }),
	"gpus":     byNum(func(f schemas.Finding) int { return len(f.GPUUUIDs) }),
	"since":    byNum(func(f schemas.Finding) int64 { return f.Since.UnixNano() }),
	"waste":    byNum(func(f schemas.Finding) float64 { return f.WasteGPUHours }),
	"cost":     byNum(func(f schemas.Finding) float64 { return f.WasteCost }),
}

var actionCmps = map[string]func(a, b scheduler.Action) int{
	"time":     byNum(func(a scheduler.Action) int64 { return a.Time.UnixNano() }),
	"decision": byStr(func(a scheduler.Action) string { return a.Decision }),
	// A dry run after the real one of the same outcome, as the cell reads.
	"outcome": func(a, b scheduler.Action) int {
		return cmp.Or(cmp.Compare(a.Outcome, b.Outcome), cmp.Compare(dryRank(a), dryRank(b)))
	},
	"job":     byStr(func(a scheduler.Action) string { return a.Job }),
	"team":    byStr(func(a scheduler.Action) string { return a.Team }),
	"finding": byStr(func(a scheduler.Action) string { return a.FindingKind }),
	"policy":  byStr(func(a scheduler.Action) string { return a.Policy }),
}

func dryRank(a scheduler.Action) int {
	if a.DryRun {
		return 1
	}
	return 0
}

// rowsTable is a table of a part (findingRows, actionRows): its rows (this
// page of them) and its order and page.
type rowsTable[T any] struct {
	Rows []T
	T    *tableView
}
