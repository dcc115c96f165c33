package demo

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/backend"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// smallConfig is a small, busy fleet for a few simulated hours, as fast as the
// machine goes.
func smallConfig(t *testing.T, hours int) config.Config {
	t.Helper()
	c := config.Default()
	c.DataDir = t.TempDir()
	c.LogLevel = "warn"
	c.Store.CHDB.LibPath = chdbtest.LibPath()
	c.Sim.Clusters, c.Sim.NodesPerCluster, c.Sim.GPUsPerNode, c.Sim.Load, c.Sim.Seed = 1, 4, 4, 0.95, 2
	c.Demo.Duration, c.Demo.Speed = time.Duration(hours)*time.Hour, 0
	Apply(&c, 0)
	if err := c.Finish(""); err != nil {
		t.Fatal(err)
	}
	return c
}

// runDemo runs the demo on c and opens what it stored.
func runDemo(t *testing.T, c config.Config, opts ...Option) (string, store.Store) {
	text, st, _ := runDemoFleet(t, c, opts...)
	return text, st
}

// runDemoFleet is runDemo, also returning the simulator's ground truth of the
// run: the jobs and conditions it planted, under the scheduler's admission.
func runDemoFleet(t *testing.T, c config.Config, opts ...Option) (string, store.Store, []sim.Truth) {
	t.Helper()
	var out bytes.Buffer
	opts = append([]Option{WithOutput(&out), WithProgress(reports.NewProgressLines(io.Discard, time.Hour))}, opts...)
	d, err := New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	st, err := backend.OpenExisting(t.Context(), c.Store, slog.New(slog.DiscardHandler), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return out.String(), st, d.driver.Fleet().Truth()
}

// jobEvent is one stored job event.
type jobEvent struct {
	at              time.Time
	job, event      string
	status, rerunOf string
	uuids           []string
}

func jobEvents(t *testing.T, ctx context.Context, st store.Store) []jobEvent {
	t.Helper()
	res, err := st.Query(ctx, "SELECT ts, job, event, status, rerun_of, gpu_uuids FROM "+st.Database()+".job_events ORDER BY ts, job, event", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []jobEvent
	for i, row := range res.Rows {
		e := jobEvent{}
		e.at, _ = row[0].(time.Time)
		e.job, _ = res.String(i, "job")
		e.event, _ = res.String(i, "event")
		e.status, _ = res.String(i, "status")
		e.rerunOf, _ = res.String(i, "rerun_of")
		if a, ok := row[5].([]any); ok {
			for _, u := range a {
				e.uuids = append(e.uuids, store.FormatValue(u))
			}
		}
		out = append(out, e)
	}
	return out
}

// TestClosedLoop runs the demo on a small busy fleet and follows one idle dev
// notebook through the loop: the simulator planted it idle (its ground truth
// says so), the analyzer found it over the stored telemetry (findings table), the
// scheduler notified its owner and reclaimed it after the policy's grace through
// the sim executor (actions, linked to the finding, with the executor's result),
// the fleet ended it preempted (job events), and a job that was queued before the
// reclaim started on one of its GPUs.
func TestClosedLoop(t *testing.T) {
	c := smallConfig(t, 4)
	text, st, planted := runDemoFleet(t, c, WithBaseline(false))
	ctx := t.Context()
	rows, err := audit.NewStoreRecorder(st).Actions(ctx, scheduler.ActionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	events := jobEvents(t, ctx, st)
	truth := map[string]bool{}
	for _, tr := range planted {
		if tr.Kind == schemas.KindIdle {
			truth[tr.Job] = true
		}
	}
	policy := Policies()[0]
	grace := policy.Steps[1].After
	var followed int
	for _, r := range rows {
		if r.Decision != scheduler.DecReclaim || r.Outcome != scheduler.OutcomeOK || r.Policy != policy.Name {
			continue
		}
		// The finding behind it: the analyzer's, on this job, idle, in a dev pool.
		res, err := st.Query(ctx, "SELECT kind, job, pool FROM "+st.Database()+".findings WHERE id = {id:String} LIMIT 1",
			store.Params{"id": r.FindingID})
		if err != nil || len(res.Rows) != 1 {
			t.Fatalf("reclaim %+v: finding %q not in the findings table (%v)", r, r.FindingID, err)
		}
		kind, _ := res.String(0, "kind")
		fjob, _ := res.String(0, "job")
		pool, _ := res.String(0, "pool")
		if kind != string(schemas.KindIdle) || fjob != r.Job || pool != scheduler.PoolDev {
			t.Errorf("reclaim of %s on finding %s: the finding is %s on %s in pool %s", r.Job, r.FindingID, kind, fjob, pool)
		}
		if r.Executor != "sim" || !strings.Contains(r.Reason, "stopped and requeued in the simulated fleet") {
			t.Errorf("reclaim of %s: executor %q, reason %q: want the sim executor's result", r.Job, r.Executor, r.Reason)
		}
		notified := slices.ContainsFunc(rows, func(n scheduler.Action) bool {
			return n.Decision == scheduler.DecNotify && n.Outcome == scheduler.OutcomeOK && n.FindingID == r.FindingID &&
				!n.Time.Add(grace).After(r.Time)
		})
		if !notified {
			t.Errorf("reclaim of %s at %s: no notice on finding %s at least %s before", r.Job, r.Time, r.FindingID, grace)
		}
		if !truth[r.Job] {
			t.Errorf("reclaim of %s: not idle in the simulator's truth of the run", r.Job)
			continue
		}
		if to := freedTo(events, r); to != "" {
			t.Logf("reclaim of %s at %s on finding %s: its GPUs went to %s", r.Job, r.Time.Format(time.TimeOnly), r.FindingID, to)
			followed++
		} else {
			t.Logf("reclaim of %s at %s: no queued job took its GPUs", r.Job, r.Time.Format(time.TimeOnly))
		}
	}
	checkAdmitted(t, rows, events)
	if followed == 0 {
		t.Fatalf("no reclaimed idle dev job whose GPUs went to a queued job (%d actions)\n%s", len(rows), text)
	}
	if i := strings.Index(text, "Capacity forecast"); i < 0 || !strings.Contains(text[i:], "Plan for a p95 wait ≤ 1h:") || strings.Contains(text[i:], "No cluster and card type") {
		t.Errorf("no capacity forecast in the summary:\n%s", text)
	}
	if !strings.Contains(text, "Analyzer: ") || strings.Contains(text, "ran before ingest") {
		t.Errorf("passes:\n%s", text)
	}
	// The whole output fits 140 columns, the capacity forecast's table and plan
	// (capacity.WriteTable) included.
	checkFits(t, text)
}

// checkAdmitted checks that the scheduler admitted every job the fleet started,
// on whole GPUs and on MIG instances (processes started by hand are not gated),
// and the sim executor resumed it, at or before its start.
func checkAdmitted(t *testing.T, rows []scheduler.Action, events []jobEvent) {
	t.Helper()
	admitted, resumed := map[string]time.Time{}, map[string]time.Time{}
	for _, r := range rows {
		switch {
		case r.Decision == scheduler.DecAdmit && r.Outcome == scheduler.OutcomeOK:
			admitted[r.Job] = r.Time
		case r.Decision == scheduler.DecResume && r.Outcome == scheduler.OutcomeOK && r.Executor == "sim":
			resumed[r.Job] = r.Time
		}
	}
	n := 0
	for _, e := range events {
		if e.event != schemas.EventStart || strings.HasPrefix(e.job, "proc/") || len(e.uuids) == 0 {
			continue
		}
		n++
		a, ok := admitted[e.job]
		r, rok := resumed[e.job]
		if !ok || !rok || a.After(e.at) || r.After(e.at) {
			t.Errorf("%s started at %s: admitted %v (%s), resumed %v (%s)", e.job, e.at, ok, a, rok, r)
		}
	}
	if n == 0 || len(admitted) < n {
		t.Errorf("%d jobs started on whole GPUs, %d admitted", n, len(admitted))
	}
	t.Logf("%d jobs started on whole GPUs, each admitted by the scheduler first", n)
}

// freedTo is the job that next started on one of the GPUs reclaim r freed, if it
// was queued before the reclaim ("" if none, or the reclaimed job did not end
// preempted at r).
func freedTo(events []jobEvent, r scheduler.Action) string {
	var gpus []string
	var ended time.Time
	for _, e := range events {
		switch {
		case e.job == r.Job && e.event == schemas.EventStart:
			gpus = e.uuids
		case e.job == r.Job && e.event == schemas.EventEnd && e.status == schemas.StatusPreempted:
			ended = e.at
		}
	}
	// The fleet stops it a millisecond after its last tick, at most a tick before
	// the pass time.
	if ended.IsZero() || ended.Sub(r.Time).Abs() > time.Minute {
		return ""
	}
	submitted := map[string]time.Time{}
	for _, e := range events {
		if e.event == schemas.EventSubmit {
			submitted[e.job] = e.at
		}
		if e.event != schemas.EventStart || e.job == r.Job || e.at.Before(ended) ||
			!slices.ContainsFunc(e.uuids, func(u string) bool { return slices.Contains(gpus, u) }) {
			continue
		}
		if s, ok := submitted[e.job]; ok && s.Before(ended) {
			return e.job
		}
		return "" // the first to take them came later
	}
	return ""
}

// TestDeterministic runs the same small demo twice: the analyzer's findings and
// the scheduler's decisions are the same, count for count (passes run inline
// with the fleet, whatever the machine's load).
func TestDeterministic(t *testing.T) {
	counts := func() string {
		c := smallConfig(t, 2)
		_, st := runDemo(t, c, WithBaseline(false))
		res, err := st.Query(t.Context(), `SELECT
    (SELECT groupArray((kind, n)) FROM (SELECT kind, uniqExact(id, episode) AS n FROM `+st.Database()+`.findings GROUP BY kind ORDER BY kind)) AS findings,
    (SELECT groupArray((decision, outcome, job, finding_id)) FROM (SELECT decision, outcome, job, finding_id FROM `+st.Database()+`.actions ORDER BY ts, decision, job, finding_id)) AS actions`, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = st.Close() // the next run opens its own data path
		return store.FormatValue(res.Rows[0][0]) + "\n" + store.FormatValue(res.Rows[0][1])
	}
	first, second := counts(), counts()
	if first != second {
		t.Errorf("two runs of one seed differ:\n%s\n---\n%s", first, second)
	}
	if !strings.Contains(first, "idle") {
		t.Errorf("no idle findings: %s", first)
	}
}
