package console

import "strings"

// The pools page's tables of jobs (who a reclaim would stop, the
// reservations, the viewer's waiting jobs), each sorted and paged in memory
// under its own parameters. Another team's row is compared by what it shows:
// its hidden job (and a reservation's queue and team) as empty.

// reclaimTable is the jobs running on borrowed quota: the latest admitted first
// by default.
var reclaimTable = &tableDef{name: "reclaim", prefix: "reclaim_", id: "reclaim", sort: "admitted", desc: true, cols: []sortCol{
	{Key: "job", Label: "Job"}, {Key: "queue", Label: "Queue"}, {Key: "pool", Label: "Pool"}, {Key: "team", Label: "Team"},
	{Key: "card", Label: "Card"}, {Key: "gpus", Label: "GPUs", Num: true, Desc: true},
	{Key: "borrowed", Label: "Borrowed", Num: true, Desc: true}, {Key: "admitted", Label: "Admitted", Desc: true},
}}

var reclaimCmps = map[string]func(a, b reclaimRow) int{
	"job":      byStr(func(r reclaimRow) string { return r.Job }),
	"queue":    byStr(func(r reclaimRow) string { return r.Queue }),
	"pool":     byStr(func(r reclaimRow) string { return r.Pool }),
	"team":     byStr(func(r reclaimRow) string { return r.Team }),
	"card":     byStr(func(r reclaimRow) string { return r.Card }),
	"gpus":     byNum(func(r reclaimRow) int { return r.GPUs }),
	"borrowed": byNum(func(r reclaimRow) int { return r.Borrowed }),
	"admitted": func(a, b reclaimRow) int { return a.Admitted.Compare(b.Admitted) },
}

// reservationsTable is the reservations: the soonest first by default.
var reservationsTable = &tableDef{name: "reservations", prefix: "reservations_", id: "reservations", sort: "from", cols: []sortCol{
	{Key: "job", Label: "Job"}, {Key: "queue", Label: "Queue"}, {Key: "team", Label: "Team"},
	{Key: "gpus", Label: "GPUs", Num: true, Desc: true}, {Key: "nodes", Label: "Nodes"}, {Key: "from", Label: "From"},
}}

var reservationCmps = map[string]func(a, b reservationRow) int{
	"job":   byStr(func(r reservationRow) string { return r.Job }),
	"queue": byStr(func(r reservationRow) string { return r.Queue }),
	"team":  byStr(func(r reservationRow) string { return r.Team }),
	"gpus":  byNum(func(r reservationRow) int { return r.GPUs }),
	"nodes": byStr(func(r reservationRow) string { return r.Nodes }),
	"from":  func(a, b reservationRow) int { return a.From.Compare(b.From) },
}

// waitingTable is the viewer's waiting jobs: by expected start by default, a
// job with none yet ("–") first, as "–" sorts in every list.
var waitingTable = &tableDef{name: "waiting", prefix: "waiting_", id: "waiting", sort: "expected", cols: []sortCol{
	{Key: "job", Label: "Job"}, {Key: "queue", Label: "Queue"}, {Key: "gpus", Label: "GPUs", Num: true, Desc: true},
	{Key: "expected", Label: "Expected start"}, {Key: "why", Label: "Why it waits"},
}}

var waitingCmps = map[string]func(a, b waitingRow) int{
	"job":      byStr(func(w waitingRow) string { return w.Job }),
	"queue":    byStr(func(w waitingRow) string { return w.Queue }),
	"gpus":     byNum(func(w waitingRow) int { return w.GPUs }),
	"expected": func(a, b waitingRow) int { return a.ExpectedStart.Compare(b.ExpectedStart) },
	"why":      func(a, b waitingRow) int { return strings.Compare(a.Why, b.Why) },
}

// pageSchedulerTables sorts and cuts the tables read from the scheduler.
func pageSchedulerTables(d *poolsData) {
	d.Pools = pageOf(d.PoolsT, d.Pools, poolCmps)
	d.Queues = pageOf(d.QueuesT, d.Queues, queueCmps(d.Wait))
	d.Reclaim = pageOf(d.ReclaimT, d.Reclaim, reclaimCmps)
	d.Reservations = pageOf(d.ReservationsT, d.Reservations, reservationCmps)
	d.Waiting = pageOf(d.WaitingT, d.Waiting, waitingCmps)
}
