package console

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/store"
)

// queueWaitSQL is each queue's wait over the window, from the finance view.
const queueWaitSQL = `SELECT queue, pool, count() AS jobs, countIf(state = 'queued') AS waiting,
    quantile(0.5)(queue_wait_hours) AS p50_hours, quantile(0.95)(queue_wait_hours) AS p95_hours,
    sum(queued_gpu_hours) AS queued_gpu_hours
FROM queue_wait
WHERE submit_time >= {from:DateTime64(3, 'UTC')} AND submit_time < {to:DateTime64(3, 'UTC')}
GROUP BY queue, pool
ORDER BY pool, queue`

type queueWait struct {
	Queue, Pool              string
	Jobs, Waiting            int64
	P50, P95, QueuedGPUHours float64
}

type poolRow struct {
	scheduler.Pool
	Cards                    []string
	Queues, Pending, Running int
	// Used, Borrowed and Idle count whole GPUs; MIGUsed the MIG instances
	// (resources "<card>/<profile>") the pool's jobs hold, apart: an instance
	// is not a GPU.
	Used, Borrowed, Idle int
	MIGUsed              int
}

type reclaimRow struct {
	Job, Queue, Pool, Team, Card string
	Hidden                       bool
	GPUs, Borrowed               int
	Admitted                     time.Time
}

type poolsData struct {
	Scheduler  bool
	SchedError string
	Pools      []poolRow
	Queues     []scheduler.QueueStatus
	Wait       map[string]queueWait
	Waits      []queueWait
	Reclaim    []reclaimRow
	// Placed: the scheduler places jobs on nodes; Reservations and Waiting
	// are then read (pools_place.go).
	Placed       bool
	Reservations []reservationRow
	Waiting      []waitingRow
	// Frag is the scheduler's fragmentation figure (pools_frag.go).
	Frag []fragRow
	// FragFindings are the open fragmentation findings (pools_frag.go).
	FragFindings []fragFindingRow
	// Window is the queue waits' (the time range; default 7 days).
	Window window
	// The tables' orders and pages.
	PoolsT, QueuesT, WaitsT           *tableView
	ReclaimT, ReservationsT, WaitingT *tableView
}

// poolsTable is the pools' order: by name by default.
var poolsTable = &tableDef{name: "pools", prefix: "pools_", id: "pools", sort: "pool", cols: []sortCol{
	{Key: "pool", Label: "Pool"}, {Key: "lends", Label: "Lends"}, {Key: "borrows", Label: "Borrows"},
	{Key: "preemptible", Label: "Preemptible"}, {Key: "protected", Label: "Protected"},
	{Key: "queues", Label: "Queues", Num: true, Desc: true}, {Key: "running", Label: "Running", Num: true, Desc: true},
	{Key: "waiting", Label: "Waiting", Num: true, Desc: true}, {Key: "used", Label: "GPUs used", Num: true, Desc: true},
	{Key: "borrowed", Label: "Borrowed", Num: true, Desc: true}, {Key: "idle", Label: "Lent / idle", Num: true, Desc: true},
}}

var poolCmps = map[string]func(a, b poolRow) int{
	"pool":        byStr(func(p poolRow) string { return p.Name }),
	"lends":       byStr(func(p poolRow) string { return strconv.FormatBool(p.MayLend) }),
	"borrows":     byStr(func(p poolRow) string { return strconv.FormatBool(p.MayBorrow) }),
	"preemptible": byStr(func(p poolRow) string { return strconv.FormatBool(p.Preemptible) }),
	"protected":   byStr(func(p poolRow) string { return strconv.FormatBool(p.Protected) }),
	"queues":      byNum(func(p poolRow) int { return p.Queues }),
	"running":     byNum(func(p poolRow) int { return p.Running }),
	"waiting":     byNum(func(p poolRow) int { return p.Pending }),
	"used":        byNum(func(p poolRow) int { return p.Used }),
	"borrowed":    byNum(func(p poolRow) int { return p.Borrowed }),
	"idle":        byNum(func(p poolRow) int { return p.Idle }),
}

// queuesTable is the queues' order: the scheduler's (by pool, then queue) by
// default.
var queuesTable = &tableDef{name: "queues", prefix: "queues_", id: "queues", sort: "pool", cols: []sortCol{
	{Key: "queue", Label: "Queue"}, {Key: "pool", Label: "Pool"}, {Key: "team", Label: "Team"}, {Key: "cohort", Label: "Cohort"},
	{Key: "weight", Label: "Weight", Num: true, Desc: true}, {Key: "running", Label: "Running", Num: true, Desc: true},
	{Key: "waiting", Label: "Waiting", Num: true, Desc: true},
	{Key: "p50", Label: "Wait p50 h", Num: true, Desc: true}, {Key: "p95", Label: "Wait p95 h", Num: true, Desc: true},
}}

// queueCmps compares queues, their waits read from wait.
func queueCmps(wait map[string]queueWait) map[string]func(a, b scheduler.QueueStatus) int {
	type q = scheduler.QueueStatus
	return map[string]func(a, b q) int{
		"queue":   byStr(func(x q) string { return x.Name }),
		"pool":    byStr(func(x q) string { return x.Pool + "/" + x.Name }),
		"team":    byStr(func(x q) string { return x.Team }),
		"cohort":  byStr(func(x q) string { return x.Cohort }),
		"weight":  byNum(func(x q) float64 { return x.Weight }),
		"running": byNum(func(x q) int { return x.Running }),
		"waiting": byNum(func(x q) int { return x.Pending }),
		"p50":     byNum(func(x q) float64 { return wait[x.Name].P50 }),
		"p95":     byNum(func(x q) float64 { return wait[x.Name].P95 }),
	}
}

// waitsTable is the queue waits' order: by pool and queue by default.
var waitsTable = &tableDef{name: "queue-wait", prefix: "wait_", id: "queue-wait", sort: "pool", cols: []sortCol{
	{Key: "queue", Label: "Queue"}, {Key: "pool", Label: "Pool"}, {Key: "jobs", Label: "Jobs", Num: true, Desc: true},
	{Key: "waiting", Label: "Waiting now", Num: true, Desc: true}, {Key: "p50", Label: "p50 h", Num: true, Desc: true},
	{Key: "p95", Label: "p95 h", Num: true, Desc: true}, {Key: "queued", Label: "Queued GPU-h", Num: true, Desc: true},
}}

var waitRowCmps = map[string]func(a, b queueWait) int{
	"queue":   byStr(func(w queueWait) string { return w.Queue }),
	"pool":    byStr(func(w queueWait) string { return w.Pool + "/" + w.Queue }),
	"jobs":    byNum(func(w queueWait) int64 { return w.Jobs }),
	"waiting": byNum(func(w queueWait) int64 { return w.Waiting }),
	"p50":     byNum(func(w queueWait) float64 { return w.P50 }),
	"p95":     byNum(func(w queueWait) float64 { return w.P95 }),
	"queued":  byNum(func(w queueWait) float64 { return w.QueuedGPUHours }),
}

func (c *Console) poolsPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	now := c.now(ctx)
	d := &poolsData{Scheduler: c.sched != nil, Wait: map[string]queueWait{}}
	tvs, err := parseTables(r, poolsTable, queuesTable, waitsTable, reclaimTable, reservationsTable, waitingTable)
	if err != nil {
		return nil, err
	}
	d.PoolsT, d.QueuesT, d.WaitsT = tvs[0], tvs[1], tvs[2]
	d.ReclaimT, d.ReservationsT, d.WaitingT = tvs[3], tvs[4], tvs[5]
	if d.Window, err = pageWindow(r, now, 7*24*time.Hour); err != nil {
		return nil, err
	}
	res, err := c.query(ctx, "queue wait", queueWaitSQL, store.Params{"from": tsParam(d.Window.From), "to": tsParam(now)})
	if err != nil {
		return nil, err
	}
	for i := range res.n() {
		w := queueWait{Queue: res.str(i, "queue"), Pool: res.str(i, "pool"), Jobs: int64(res.num0(i, "jobs")), Waiting: int64(res.num0(i, "waiting")),
			P50: res.num0(i, "p50_hours"), P95: res.num0(i, "p95_hours"), QueuedGPUHours: res.num0(i, "queued_gpu_hours")}
		d.Wait[w.Queue] = w
		d.Waits = append(d.Waits, w)
	}
	if err := res.err(); err != nil {
		return nil, err
	}
	d.Waits = pageOf(d.WaitsT, d.Waits, waitRowCmps)
	if c.sched == nil {
		return d, nil
	}
	if err := c.schedulerState(ctx, d, v); err != nil {
		d.SchedError = err.Error()
	}
	pageSchedulerTables(d)
	return d, nil
}

// schedulerState reads the pools, queues and the jobs a reclaim would stop from
// the scheduler's API.
func (c *Console) schedulerState(ctx context.Context, d *poolsData, v viewer) error {
	m, err := c.sched.Model(ctx)
	if err != nil {
		return err
	}
	if d.Queues, err = c.sched.Queues(ctx); err != nil {
		return err
	}
	pools := map[string]*poolRow{}
	for _, p := range m.Pools {
		pr := &poolRow{Pool: p}
		for card := range p.Capacity {
			pr.Cards = append(pr.Cards, card)
		}
		slices.Sort(pr.Cards)
		pools[p.Name] = pr
		d.Pools = append(d.Pools, *pr)
	}
	borrowing := map[string]bool{}
	for _, q := range d.Queues {
		pr := pools[q.Pool]
		if pr == nil {
			continue
		}
		pr.Queues++
		pr.Pending += q.Pending
		pr.Running += q.Running + q.Reclaiming
		for _, cu := range q.Cards {
			if strings.Contains(cu.Card, "/") {
				pr.MIGUsed += cu.Used
				if cu.Borrowed > 0 {
					borrowing[q.Name] = true
				}
				continue
			}
			pr.Used += cu.Used
			pr.Borrowed += cu.Borrowed
			pr.Idle += cu.Idle
			if cu.Borrowed > 0 {
				borrowing[q.Name] = true
			}
		}
	}
	for i := range d.Pools {
		d.Pools[i] = *pools[d.Pools[i].Name]
	}
	// Jobs that run on borrowed quota: what a reclaim by the lenders would stop
	// (sorted by reclaimTable).
	for _, q := range slices.Sorted(maps.Keys(borrowing)) {
		jobs, err := c.sched.Jobs(ctx, scheduler.JobFilter{Queue: q, State: scheduler.StateAdmitted})
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.Borrowed == 0 {
				continue
			}
			rr := reclaimRow{Job: j.ID, Queue: j.Spec.Queue, Pool: j.Pool, Team: j.Spec.Team, Card: j.Card, GPUs: j.Spec.GPUs,
				Borrowed: j.Borrowed, Admitted: j.AdmitTime}
			if !v.sees(j.Spec.Team) {
				rr.Job, rr.Hidden = "", true
			}
			d.Reclaim = append(d.Reclaim, rr)
		}
	}
	if d.Placed = placedModel(m); d.Placed {
		return c.placementState(ctx, d, v)
	}
	return nil
}
