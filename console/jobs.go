package console

import (
	"context"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

const jobColumns = `job, team, project, queue, pool, cluster, card, gpus, state, status, submit_time, start_time,
    end_time, attempt, workload, model_name, gpu_uuids, nodes, rerun_of, exit_code`

// jobsWhere is what the jobs list's filters select: the viewer's teams, the
// state, team, queue and text asked for, and the jobs that were waiting or
// running at some time in the window (from, to).
const jobsWhere = `WHERE ({all:UInt8} = 1 OR team IN {teams:Array(String)})
    AND ({state:String} = '' OR state = {state:String})
    AND ({team:String} = '' OR team = {team:String})
    AND ({queue:String} = '' OR queue = {queue:String})
    AND ({q:String} = '' OR positionCaseInsensitive(job, {q:String}) > 0 OR positionCaseInsensitive(project, {q:String}) > 0)
    AND (end_time IS NULL OR end_time >= {from:DateTime64(3, 'UTC')})
    AND coalesce(submit_time, start_time) < {to:DateTime64(3, 'UTC')}`

// jobsTable is the jobs list's sort order: running first, then queued, then
// ended, the latest first within each, by default.
var jobsTable = &tableDef{name: "jobs", sort: "state", tieBreak: "coalesce(end_time, start_time, submit_time) DESC, job",
	cols: []sortCol{
		{Key: "job", Label: "Job", SQL: "job"},
		{Key: "team", Label: "Team", SQL: "team"},
		{Key: "queue", Label: "Queue", SQL: "queue"},
		{Key: "card", Label: "GPUs", SQL: "card, gpus"},
		{Key: "state", Label: "State", SQL: "multiIf(state = 'running', 0, state = 'queued', 1, 2)"},
		{Key: "submitted", Label: "Submitted", SQL: "submit_time", Desc: true},
		{Key: "waited", Label: "Waited", SQL: "dateDiff('second', submit_time, coalesce(start_time, {to:DateTime64(3, 'UTC')}))", Num: true, Desc: true},
		{Key: "ran", Label: "Ran", SQL: "dateDiff('second', start_time, coalesce(end_time, {to:DateTime64(3, 'UTC')}))", Num: true, Desc: true},
	}}

// jobStatesSQL counts the jobs the filters select but the state, by state.
const jobStatesSQL = `SELECT state, count() AS jobs FROM jobs ` + jobsWhere + ` GROUP BY state`

// jobChoicesSQL is the teams and queues of the viewer's jobs: the filters'
// choices.
const jobChoicesSQL = `SELECT arraySort(groupUniqArrayIf(team, team != '')) AS teams, arraySort(groupUniqArrayIf(queue, queue != '')) AS queues
FROM jobs WHERE ({all:UInt8} = 1 OR team IN {teams:Array(String)})`

// jobCostSQL is the chargeback of job attempts, from the finance view.
var jobCostSQL = `SELECT c.job AS job,` + chargeback.Figures("c") + `
FROM chargeback_priced AS c
WHERE c.job IN {jobs:Array(String)}
GROUP BY c.job`

type jobRow struct {
	Job, Team, Project, Queue, Pool, Cluster, Card string
	GPUs                                           int64
	State, Status, Workload, Model, RerunOf        string
	Submit, Start, End                             time.Time
	Attempt, ExitCode                              int64
	GPUUUIDs, Nodes                                []string
	Wait, Ran                                      time.Duration
	Cost                                           jobCost
}

type jobCost struct {
	GPUHours, UsedGPUHours, IdleGPUHours, EnergyKWh float64
	Cost, IdleCost                                  *float64
	Currency                                        string
	Known                                           bool
}

func readJobs(r *rows, now time.Time) ([]jobRow, error) {
	out := make([]jobRow, 0, r.n())
	for i := range r.n() {
		j := jobRow{Job: r.str(i, "job"), Team: r.str(i, "team"), Project: r.str(i, "project"), Queue: r.str(i, "queue"),
			Pool: r.str(i, "pool"), Cluster: r.str(i, "cluster"), Card: r.str(i, "card"), GPUs: int64(r.num0(i, "gpus")),
			State: r.str(i, "state"), Status: r.str(i, "status"), Workload: r.str(i, "workload"), Model: r.str(i, "model_name"),
			RerunOf: r.str(i, "rerun_of"), Submit: r.time(i, "submit_time"), Start: r.time(i, "start_time"), End: r.time(i, "end_time"),
			Attempt: int64(r.num0(i, "attempt")), ExitCode: int64(r.num0(i, "exit_code")), GPUUUIDs: r.strs(i, "gpu_uuids"), Nodes: r.strs(i, "nodes")}
		switch {
		case !j.Start.IsZero() && !j.Submit.IsZero():
			j.Wait = j.Start.Sub(j.Submit)
		case !j.Submit.IsZero():
			j.Wait = now.Sub(j.Submit)
		}
		if !j.Start.IsZero() {
			end := j.End
			if end.IsZero() {
				end = now
			}
			j.Ran = end.Sub(j.Start)
		}
		out = append(out, j)
	}
	return out, r.err()
}

type jobsData struct {
	State, Team, Queue, Q string
	Teams, Queues         []string
	States                map[string]int64
	Jobs                  []jobRow
	T                     *tableView
	Window                window
}

func (c *Console) jobsPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	q := r.URL.Query()
	d := &jobsData{State: q.Get("state"), Team: q.Get("team"), Queue: q.Get("queue"), Q: q.Get("q"), States: map[string]int64{}}
	switch d.State {
	case "", "running", "queued", "ended":
	default:
		return nil, badParam("state", d.State, "running, queued or ended")
	}
	tv, err := parseTable(r, jobsTable)
	if err != nil {
		return nil, err
	}
	d.T = tv
	now := c.now(ctx)
	if d.Window, err = pageWindow(r, now, 0); err != nil {
		return nil, err
	}
	p := teamParams(store.Params{"state": d.State, "team": d.Team, "queue": d.Queue, "q": d.Q,
		"from": tsParam(d.Window.From), "to": tsParam(now)}, v)
	tv.limitParams(p)
	res, err := c.query(ctx, "jobs", "SELECT "+jobColumns+" FROM jobs "+jobsWhere+" ORDER BY "+tv.orderBy()+
		" LIMIT {limit:UInt32} OFFSET {offset:UInt64}", p)
	if err != nil {
		return nil, err
	}
	if d.Jobs, err = readJobs(res, now); err != nil {
		return nil, err
	}
	tv.Shown = len(d.Jobs)
	sp := maps.Clone(p)
	sp["state"] = ""
	st, err := c.query(ctx, "jobs by state", jobStatesSQL, sp)
	if err != nil {
		return nil, err
	}
	for i := range st.n() {
		n := int64(st.num0(i, "jobs"))
		d.States[st.str(i, "state")] = n
		if d.State == "" || d.State == st.str(i, "state") {
			tv.Total += int(n)
		}
	}
	if err := st.err(); err != nil {
		return nil, err
	}
	ch, err := c.query(ctx, "jobs: choices", jobChoicesSQL, teamParams(store.Params{}, v))
	if err != nil {
		return nil, err
	}
	if ch.n() == 1 {
		d.Teams, d.Queues = ch.strs(0, "teams"), ch.strs(0, "queues")
	}
	if err := ch.err(); err != nil {
		return nil, err
	}
	d.Teams, d.Queues = withChoice(d.Teams, d.Team), withChoice(d.Queues, d.Queue)
	if err := c.addCosts(ctx, d.Jobs); err != nil {
		return nil, err
	}
	return d, nil
}

// addCosts fills the jobs' chargeback figures, from the cache while the
// chargeback has not been refreshed since they were read.
func (c *Console) addCosts(ctx context.Context, jobs []jobRow) error {
	if len(jobs) == 0 {
		return nil
	}
	version, err := c.refreshVersion(ctx)
	if err != nil {
		return err
	}
	c.costs.mu.Lock()
	if c.costs.version != version || len(c.costs.byJob) > maxCachedCosts {
		c.costs.version, c.costs.byJob = version, map[string]jobCost{}
	}
	var missing []string
	for i := range jobs {
		if jc, ok := c.costs.byJob[jobs[i].Job]; ok {
			jobs[i].Cost = jc
		} else {
			missing = append(missing, jobs[i].Job)
		}
	}
	c.costs.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	res, err := c.query(ctx, "job costs", jobCostSQL, store.Params{"jobs": arrayParam(missing)})
	if err != nil {
		return err
	}
	byJob := map[string]jobCost{}
	for _, k := range missing {
		byJob[k] = jobCost{} // no chargeback rows (yet): zero, and cached as such
	}
	for i := range res.n() {
		byJob[res.str(i, "job")] = jobCost{GPUHours: res.num0(i, "gpu_hours"), UsedGPUHours: res.num0(i, "used_gpu_hours"),
			IdleGPUHours: res.num0(i, "idle_gpu_hours"), EnergyKWh: res.num0(i, "energy_kwh"), Cost: res.opt(i, "cost"),
			IdleCost: res.opt(i, "idle_cost"), Currency: res.str(i, "currency"), Known: true}
	}
	if err := res.err(); err != nil {
		return err
	}
	c.costs.mu.Lock()
	if c.costs.version == version {
		maps.Copy(c.costs.byJob, byJob)
	}
	c.costs.mu.Unlock()
	for i := range jobs {
		if jc, ok := byJob[jobs[i].Job]; ok {
			jobs[i].Cost = jc
		}
	}
	return nil
}

// costCache keeps job attempts' chargeback figures until the next refresh.
type costCache struct {
	mu      sync.Mutex
	version string
	byJob   map[string]jobCost
}

// maxCachedCosts bounds the cost cache (it starts over past it).
const maxCachedCosts = 200000

// timelineSQL is the job's GPUs' activity over its run, per bucket of
// {bucket} seconds, from the gpu_activity_minutely view.
const timelineSQL = `SELECT gpu_uuid, toStartOfInterval(minute, toIntervalSecond({bucket:UInt32})) AS t,
    sum(sm_active_sum) / nullIf(sum(sm_active_samples), 0) AS sm_active,
    sum(dram_active_sum) / nullIf(sum(dram_active_samples), 0) AS dram_active,
    max(fb_used_mib_max) AS fb_used_mib,
    sum(power_w_sum) / nullIf(sum(power_samples), 0) AS power_w
FROM gpu_activity_minutely
WHERE gpu_uuid IN {gpus:Array(String)} AND minute >= {from:DateTime('UTC')} AND minute < {to:DateTime('UTC')}
GROUP BY gpu_uuid, t
ORDER BY gpu_uuid, t`

// processSQL is the job's processes on each GPU, per bucket, from the
// process_activity_minutely view.
const processSQL = `SELECT gpu_uuid, toStartOfInterval(minute, toIntervalSecond({bucket:UInt32})) AS t,
    sum(sm_util_sum) / nullIf(sum(sm_util_samples), 0) AS sm_util,
    max(fb_used_mib_max) AS fb_used_mib
FROM process_activity_minutely
WHERE gpu_uuid IN {gpus:Array(String)} AND job = {job:String} AND minute >= {from:DateTime('UTC')} AND minute < {to:DateTime('UTC')}
GROUP BY gpu_uuid, t
ORDER BY gpu_uuid, t`

type jobData struct {
	J        jobRow
	Charts   []template.HTML
	Process  []template.HTML
	Findings []schemas.Finding
	Actions  []scheduler.Action
	Control  *jobControl // the scheduler's view and what the viewer may do (nil: not the scheduler's job, or no scheduler)
	From, To time.Time
	Bucket   time.Duration
	// Markers are the scheduler's actions drawn across the timelines.
	Markers []marker
	// The findings and actions as the page lists them: sorted, paged.
	FindingsTable rowsTable[schemas.Finding]
	ActionsTable  rowsTable[scheduler.Action]
}

// markedDecisions are the actions a job's timelines mark.
var markedDecisions = map[string]bool{"notify": true, "reclaim": true, "stop": true, "preempt": true, "requeue": true,
	"resume": true, "cancel": true, "kill": true, "expire": true}

// jobMarkers are the job's actions that its timelines mark, oldest first.
func jobMarkers(actions []scheduler.Action) []marker {
	var out []marker
	for _, a := range actions {
		if markedDecisions[a.Decision] {
			title := a.Decision + " at " + a.Time.UTC().Format("2006-01-02 15:04") + " UTC (" + a.Outcome + ")"
			if a.Reason != "" {
				title += ": " + a.Reason
			}
			out = append(out, marker{At: a.Time, Label: a.Decision, Title: title})
		}
	}
	slices.SortFunc(out, func(a, b marker) int { return a.At.Compare(b.At) })
	return out
}

func (c *Console) jobPage(ctx context.Context, r *http.Request, v viewer) (any, error) {
	key := r.PathValue("job")
	now := c.now(ctx)
	tvs, err := parseTables(r, jobFindingsTable, jobActionsTable)
	if err != nil {
		return nil, err
	}
	res, err := c.query(ctx, "job", "SELECT "+jobColumns+" FROM jobs WHERE job = {job:String}", store.Params{"job": key})
	if err != nil {
		return nil, err
	}
	jobs, err := readJobs(res, now)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%w: no job %q in the store", errNotFound, key)
	}
	j := jobs[0]
	if !v.sees(j.Team) {
		// Answered as for a job that does not exist, so that a team cannot tell
		// another team's job IDs from made-up ones.
		c.log.Info("console job of another team", "identity", v.Name(), "job", j.Job)
		return nil, fmt.Errorf("%w: no job %q in the store", errNotFound, key)
	}
	if err := c.addCosts(ctx, jobs); err != nil {
		return nil, err
	}
	d := &jobData{J: jobs[0]}
	if d.Findings, err = findings.Episodes(ctx, c.st, findings.EpisodeFilter{Job: j.Job}); err != nil {
		return nil, fmt.Errorf("console: job findings: %w", err)
	}
	if d.Actions, err = audit.NewStoreRecorder(c.st).Actions(ctx, scheduler.ActionFilter{Job: j.Job, Limit: c.cfg.MaxRows}); err != nil {
		return nil, fmt.Errorf("console: job actions: %w", err)
	}
	if !j.Start.IsZero() && len(j.GPUUUIDs) > 0 {
		if err := c.jobTimelines(ctx, d, now, jobMarkers(d.Actions)); err != nil {
			return nil, err
		}
	}
	d.Control = c.control(ctx, r, v, j.Job)
	d.FindingsTable = rowsTable[schemas.Finding]{T: tvs[0], Rows: pageOf(tvs[0], slices.Clone(d.Findings), episodeCmps)}
	d.ActionsTable = rowsTable[scheduler.Action]{T: tvs[1], Rows: pageOf(tvs[1], slices.Clone(d.Actions), actionCmps)}
	return d, nil
}

// jobTimelines draws the job's per-GPU and per-process timelines, in about 240
// buckets of whole minutes over its run.
func (c *Console) jobTimelines(ctx context.Context, d *jobData, now time.Time, marks []marker) error {
	j := d.J
	d.From, d.To = j.Start.Truncate(time.Minute), j.End
	if d.To.IsZero() || d.To.After(now) {
		d.To = now
	}
	d.To = d.To.Truncate(time.Minute).Add(time.Minute)
	d.Bucket = max(time.Minute, (d.To.Sub(d.From) / 240).Truncate(time.Minute))
	d.From = d.From.Truncate(d.Bucket)
	p := store.Params{"gpus": arrayParam(j.GPUUUIDs), "job": j.Job, "bucket": strconv.Itoa(int(d.Bucket / time.Second)),
		"from": d.From.Format(time.DateTime), "to": d.To.Format(time.DateTime)}
	res, err := c.query(ctx, "job timeline", timelineSQL, p)
	if err != nil {
		return err
	}
	n := int(d.To.Sub(d.From)/d.Bucket) + 1
	layout := "15:04"
	if d.To.Sub(d.From) > 20*time.Hour {
		layout = "01-02 15h"
	}
	labels := make([]string, n)
	for i := range labels {
		labels[i] = d.From.Add(time.Duration(i) * d.Bucket).Format(layout)
	}
	series := func(r *rows, col string, scale float64) []reports.Series {
		// One series per GPU of the job, in the job's order: GPU i is the
		// same GPU on every chart and in the page's list.
		idx := map[string]int{}
		out := make([]reports.Series, 0, len(j.GPUUUIDs))
		for k, g := range j.GPUUUIDs {
			idx[g] = k
			out = append(out, reports.Series{Name: g, Values: nanSlice(n)})
		}
		for i := range r.n() {
			k, ok := idx[r.str(i, "gpu_uuid")]
			if !ok {
				continue
			}
			if b := int(r.time(i, "t").Sub(d.From) / d.Bucket); b >= 0 && b < n {
				out[k].Values[b] = r.num(i, col) * scale
			}
		}
		return out
	}
	chart := func(title, unit string, r *rows, col string, scale float64) template.HTML {
		return timeline(title, unit, d.From, d.Bucket, labels, series(r, col, scale), marks)
	}
	d.Charts = []template.HTML{
		chart("SM active (%) per GPU", "%", res, "sm_active", 100),
		chart("Memory used (MiB) per GPU", "MiB", res, "fb_used_mib", 1),
		chart("DRAM active (%) per GPU", "%", res, "dram_active", 100),
		chart("Power (W) per GPU", "W", res, "power_w", 1),
	}
	if err := res.err(); err != nil {
		return err
	}
	pr, err := c.query(ctx, "job processes", processSQL, p)
	if err != nil {
		return err
	}
	if pr.n() > 0 {
		d.Process = []template.HTML{
			chart("The job's processes: SM share (%) per GPU", "%", pr, "sm_util", 100),
			chart("The job's processes: memory held (MiB) per GPU", "MiB", pr, "fb_used_mib", 1),
		}
	}
	if err := pr.err(); err != nil {
		return err
	}
	d.Markers = marks
	return nil
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = nan
	}
	return out
}
