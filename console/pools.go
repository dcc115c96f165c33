package console

import (
	"context"
	"net/http"
	"slices"
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
	Used, Borrowed, Idle     int
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
	// Window is the queue waits' (the time range; default 7 days).
	Window window
}

func (c *Console) poolsPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	now := c.now(ctx)
	d := &poolsData{Scheduler: c.sched != nil, Wait: map[string]queueWait{}}
	var err error
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
	if c.sched == nil {
		return d, nil
	}
	if err := c.schedulerState(ctx, d, v); err != nil {
		d.SchedError = err.Error()
	}
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
	// Jobs that run on borrowed quota: what a reclaim by the lenders would stop,
	// the latest admitted first.
	for q := range borrowing {
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
	slices.SortFunc(d.Reclaim, func(a, b reclaimRow) int { return b.Admitted.Compare(a.Admitted) })
	if d.Placed = placedModel(m); d.Placed {
		return c.placementState(ctx, d, v)
	}
	return nil
}
