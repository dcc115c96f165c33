package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/deploy"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/billing"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// The benchmark's fleet: 1,000 GPUs (125 nodes of 8, four card types) for 30 days
// to benchEnd, generated straight into the store in SQL (INSERT … SELECT FROM
// numbers) rather than simulated, which would take hours: the hourly rollup and
// the chargeback rows for the month (with their refresh generations), the minute
// rollup for the last two days, raw samples for the last ten minutes, job events,
// findings and actions. Every four GPUs form a slot that runs 12-hour jobs of 4
// GPUs with an hour free between them (about 14,000 jobs); one job in ten is
// idle and has an idle finding and a notify action. No process samples.
var (
	benchStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	benchEnd   = benchStart.AddDate(0, 0, 30)
)

const (
	benchGPUs  = 1000
	benchHours = 30 * 24
)

// benchSlot is the job shape of GPU g (an expression) at hour h: its slot s, the
// job's index k in the slot, and whether a job holds it (held), is idle (idle).
const benchSlot = `
    intDiv(g, 4) AS s, s % 13 AS off,
    h >= off AS started, intDiv(h - off, 13) AS k, (h - off) % 13 AS p,
    started AND p < 12 AS held,
    (s + k) % 10 = 0 AS idle,
    if(held, 'bench/' || toString(s) || '/' || toString(k), '') AS job_key,
    'GPU-' || toString(g) AS uuid, 'node-' || toString(intDiv(g, 8)) AS node_name, 'c' || toString(intDiv(g, 8) % 2) AS cluster_name,
    ['H100-80GB', 'A100-80GB', 'A100-40GB', 'L40S-48GB'][intDiv(g, 8) % 4 + 1] AS card_name,
    if(held AND NOT idle, 0.35 + 0.5 * ((g * 7 + h * 3) % 11) / 11, 0) AS sm`

func benchFill(b testing.TB, s store.Store) {
	b.Helper()
	ctx := context.Background()
	start := benchStart.Format(time.DateTime)
	gen := func(h string) string {
		return `toUUID(concat('00000000-0000-0000-0000-', leftPad(toString(` + h + `), 12, '0')))`
	}
	stmts := []string{
		// Hourly rollup, the month.
		fmt.Sprintf(`INSERT INTO gpu_hour (hour, gpu_uuid, cluster, node, card, mig_profile, samples, activity_samples, active_samples,
    gr_engine_active_sum, gr_engine_active_samples, sm_active_sum, sm_active_samples, tensor_active_sum, tensor_active_samples,
    dram_active_sum, dram_active_samples, fb_used_mib_max, fb_used_mib_sum, power_w_sum, power_samples, energy_mj_min, energy_mj_max, xid_samples)
SELECT toDateTime('%[1]s', 'UTC') + toIntervalHour(h), uuid, cluster_name, node_name, card_name, '', 360, 360, if(sm > 0.01, 360, 0),
    sm * 360, 360, sm * 360, 360, sm * 180, 360, sm * 200, 360, if(held, 60000, 0), if(held, 60000 * 360, 0),
    (80 + 500 * sm) * 360, 360, h * 1000000, h * 1000000 + 999999, 0
FROM (SELECT number %% %[2]d AS g, intDiv(number, %[2]d) AS h, %[3]s FROM numbers(%[4]d))`, start, benchGPUs, benchSlot, benchGPUs*benchHours),
		// Minute rollup, the last two days.
		fmt.Sprintf(`INSERT INTO gpu_minute (minute, gpu_uuid, cluster, node, card, mig_profile, samples, activity_samples, active_samples,
    gr_engine_active_sum, gr_engine_active_samples, sm_active_sum, sm_active_samples, tensor_active_sum, tensor_active_samples,
    dram_active_sum, dram_active_samples, fb_used_mib_max, fb_used_mib_sum, power_w_sum, power_samples, energy_mj_min, energy_mj_max, xid_samples)
SELECT toDateTime('%[1]s', 'UTC') + toIntervalMinute(m), uuid, cluster_name, node_name, card_name, '', 6, 6, if(sm > 0.01, 6, 0),
    sm * 6, 6, sm * 6, 6, sm * 3, 6, sm * 3, 6, if(held, 60000, 0), if(held, 60000 * 6, 0), (80 + 500 * sm) * 6, 6, m * 10000, m * 10000 + 9999, 0
FROM (SELECT number %% %[2]d AS g, %[3]d + intDiv(number, %[2]d) AS m, intDiv(m, 60) AS h, %[4]s FROM numbers(%[5]d))`,
			start, benchGPUs, (benchHours-48)*60, benchSlot, benchGPUs*48*60),
		// Raw samples, the last ten minutes, every 10 s.
		fmt.Sprintf(`INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, model, card, mig_profile, fb_total_mib, fb_used_mib,
    gr_engine_active, sm_active, dram_active, gpu_util, power_w, energy_mj, temp_c)
SELECT toDateTime64('%[1]s', 3, 'UTC') + toIntervalSecond(sec), cluster_name, node_name, uuid, toUInt16(g %% 8), 'NVIDIA ' || card_name, card_name, '',
    81920, if(held, 60000, 0), sm, sm, sm / 2, sm, 80 + 500 * sm, sec * 1000, 40 + 30 * sm
FROM (SELECT number %% %[2]d AS g, %[3]d + 10 * intDiv(number, %[2]d) AS sec, intDiv(sec, 3600) AS h, %[4]s FROM numbers(%[5]d))`,
			start, benchGPUs, benchHours*3600-600, benchSlot, benchGPUs*60),
		// Chargeback rows and their refresh generations, the month.
		fmt.Sprintf(`INSERT INTO chargeback_hourly (hour, gpu_uuid, job, generation, refreshed_at, cluster, node, card, mig_profile, gpu_weight,
    gpu_hours, used_gpu_hours, idle_gpu_hours, unmeasured_gpu_hours, energy_kwh, sm_active_mean, gr_engine_active_mean, queue_wait_hours)
SELECT toDateTime('%[1]s', 'UTC') + toIntervalHour(h), uuid, job_key, %[2]s, toDateTime64('%[1]s', 3, 'UTC') + toIntervalHour(h + 1),
    cluster_name, node_name, card_name, '', 1, 1, if(sm > 0.01, 1, 0), if(sm > 0.01, 0, 1), 0, 0.08 + 0.5 * sm, sm, sm,
    if(held AND p = 0, 0.5, 0)
FROM (SELECT number %% %[3]d AS g, intDiv(number, %[3]d) AS h, %[4]s FROM numbers(%[5]d))`, start, gen("h"), benchGPUs, benchSlot, benchGPUs*benchHours),
		fmt.Sprintf(`INSERT INTO chargeback_refreshes (hour, generation, refreshed_at, row_count, checksum)
SELECT toDateTime('%[1]s', 'UTC') + toIntervalHour(number), %[2]s, toDateTime64('%[1]s', 3, 'UTC') + toIntervalHour(number + 1), %[3]d, 0
FROM numbers(%[4]d)`, start, gen("number"), benchGPUs, benchHours),
		// Job events: submit, start and (when past) end of each slot's jobs.
		fmt.Sprintf(`INSERT INTO job_events (ts, job, event, source, cluster, team, project, queue, pool, model_name, workload, gpus, card,
    nodes, gpu_uuids, status, exit_code, attempt, rerun_of, labels)
SELECT multiIf(ev = 'submit', st - toIntervalMinute(30), ev = 'start', st, st + toIntervalHour(12)) AS ts,
    'bench/' || toString(s) || '/' || toString(k), ev, 'scheduler', 'c' || toString(intDiv(s, 2) %% 2), team, team || '-' || toString(k %% 3),
    team || '-q', pool, 'model-' || toString(s %% 7), 'training', 4, ['H100-80GB', 'A100-80GB', 'A100-40GB', 'L40S-48GB'][intDiv(s, 2) %% 4 + 1],
    ['node-' || toString(intDiv(s, 2))], arrayMap(j -> 'GPU-' || toString(s * 4 + j), range(4)), if(ev = 'end', 'succeeded', ''), 0, 1, '', map()
FROM (
    SELECT intDiv(number, 56) AS s, number %% 56 AS k, toDateTime64('%[1]s', 3, 'UTC') + toIntervalHour(s %% 13 + 13 * k) AS st,
        ['vision', 'nlp', 'speech', 'recsys', 'research'][(s * 7 + k) %% 5 + 1] AS team,
        ['training-exp', 'training-prod', 'inference-batch', 'dev'][s %% 4 + 1] AS pool
    FROM numbers(%[2]d)
) ARRAY JOIN ['submit', 'start', 'end'] AS ev
WHERE st < toDateTime64('%[3]s', 3, 'UTC') AND NOT (ev = 'end' AND st + toIntervalHour(12) > toDateTime64('%[3]s', 3, 'UTC'))`,
			start, benchGPUs/4*56, benchEnd.Format(time.DateTime)),
	}
	for _, q := range stmts {
		if err := s.Exec(ctx, q, nil); err != nil {
			b.Fatalf("%v\n%s", err, q)
		}
	}
	// The raw samples' rollups, which ingest writes (migrations 0020, 0021): from the
	// views' queries, as a backfill would.
	end := benchStart.Add(benchHours * time.Hour)
	if err := ingest.RollUpLoaded(ctx, s, end.Add(-10*time.Minute), end); err != nil {
		b.Fatal(err)
	}
	// The job rollup of the chargeback rows, as the analyzer writes it.
	if err := chargeback.BackfillRollup(ctx, s); err != nil {
		b.Fatal(err)
	}
	// One idle finding per idle job, and a notify action on it.
	findings := fmt.Sprintf(`INSERT INTO findings (id, kind, state, episode, severity, cluster, node, job, team, project, pool, card, gpu_uuids,
    pid, since, first_seen, last_seen, resolved_at, updated_at, waste_gpu_hours, waste_cost, currency, evidence, recommended, recommendation)
SELECT 'idle-' || job, '%s', if(ended, 'resolved', 'open'), 1, 'warning', cluster, nodes[1], job, team, project, pool, card, gpu_uuids, 0,
    start_time, start_time + toIntervalMinute(30), last, if(ended, last, NULL), last, 4 * dateDiff('second', start_time, last) / 3600,
    8 * dateDiff('second', start_time, last) / 3600, 'USD', map('window_minutes', 30., 'samples', 180., 'active_fraction', 0.),
    '', 'the job has been idle: stop it or give its GPUs back'
FROM (SELECT job, cluster, nodes, team, project, pool, card, gpu_uuids, start_time, end_time IS NOT NULL AS ended,
        ifNull(end_time, toDateTime64('%s', 3, 'UTC')) AS last
    FROM jobs WHERE start_time IS NOT NULL AND (toUInt32(splitByChar('/', job)[2]) + toUInt32(splitByChar('/', job)[3])) %% 10 = 0)`,
		schemas.KindIdle, benchEnd.Format(time.DateTime))
	actions := `INSERT INTO actions (ts, id, decision, outcome, reason, policy, step, job, attempt, queue, pool, team, project, cluster, node,
    pid, card, gpus, borrowed_gpus, finding_id, finding_episode, finding_kind, executor, tries, dry_run, details)
SELECT first_seen + toIntervalMinute(1), 'notify-' || id, 'notify', 'ok', 'told the owner', 'idle-policy', 0, job, 1, '', pool, team, project,
    cluster, node, 0, card, 4, 0, id, 1, kind, 'none', 1, 0, map()
FROM findings`
	for _, q := range []string{findings, actions} {
		if err := s.Exec(ctx, q, nil); err != nil {
			b.Fatalf("%v\n%s", err, q)
		}
	}
	prices, err := pricebook.Parse(bytes.NewReader(deploy.PriceBookExample))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pricebook.Load(ctx, s, prices); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkConsolePages measures each page's server time (the handler, its
// queries and rendering; no network, no browser) for a 1,000-GPU fleet with a
// month of data, as ms/page. Goal: under 1,000 ms each.
func BenchmarkConsolePages(b *testing.B) {
	s := chdbtest.Open(b)
	ctx := context.Background()
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	benchFill(b, s)
	b.Logf("filled the store in %s", time.Since(t0).Round(time.Second))
	g := newGuard(b)
	c, err := New(DefaultConfig(), s, g)
	if err != nil {
		b.Fatal(err)
	}
	h := c.Handler()
	running := "bench/100/" + fmt.Sprint((benchHours-100%13)/13)
	pages := []struct{ name, path string }{
		{"fleet", "/fleet"},
		{"pools", "/pools"},
		{"jobs", "/jobs"},
		{"job", "/jobs/" + running},
		{"findings", "/findings"},
		{"finding", "/findings/idle-bench%2F100%2F0?episode=1"},
		{"actions", "/actions"},
		{"chargeback-month", "/chargeback?period=month&at=2026-11"},
		{"chargeback-day", "/chargeback?period=day&at=2026-11-30"},
		{"capacity", "/capacity"},
	}
	get := func(b *testing.B, h http.Handler, path string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer tok-admin")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d\n%.2000s", path, rec.Code, rec.Body.String())
		}
		return rec.Body.Len()
	}
	for _, p := range pages {
		// Served by a console that has served the page once (its chargeback and
		// job-cost caches warm, as for every view after the first until the
		// analyzer's next refresh).
		b.Run(p.name, func(b *testing.B) {
			size := get(b, h, p.path)
			for b.Loop() {
				get(b, h, p.path)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
			b.ReportMetric(float64(size)/1024, "KiB")
		})
	}
	// The first view after a refresh: a fresh console, nothing cached. The
	// chargeback pages also as before migration 0012 (the baseline, in the same
	// run): the same queries over chargeback_priced (see beforeRollup).
	before := beforeRollup(b, s)
	for _, at := range []string{"2026-11", "2026-11-30"} {
		per, err := reports.ParsePeriod(at, time.UTC)
		if err != nil {
			b.Fatal(err)
		}
		now, err := billing.Build(ctx, s, per)
		if err != nil {
			b.Fatal(err)
		}
		was, err := billing.Build(ctx, before, per)
		if err != nil {
			b.Fatal(err)
		}
		// Equal up to the order of float additions: the reports round to 6
		// decimals, and a month's cost of 1.3 M summed over 720,000 or 165,000
		// rows can differ in the 6th decimal (1e-12 relative).
		if d := sameReport(now, was); d != "" {
			b.Errorf("%s: the chargeback differs from its form before migration 0012: %s", at, d)
		}
	}
	ms := map[string]float64{}
	for _, p := range pages {
		if p.name != "jobs" && p.name != "chargeback-month" && p.name != "chargeback-day" {
			continue
		}
		for _, st := range []struct {
			suffix string
			s      store.Store
		}{{"", s}, {"-before", before}} {
			if st.suffix != "" && p.name == "jobs" {
				continue
			}
			name := p.name + "-uncached" + st.suffix
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					c, err := New(DefaultConfig(), st.s, g)
					if err != nil {
						b.Fatal(err)
					}
					get(b, c.Handler(), p.path)
				}
				ms[name] = float64(b.Elapsed().Milliseconds()) / float64(b.N)
				b.ReportMetric(ms[name], "ms/page")
				if st.suffix != "" && ms[name] > 0 {
					b.ReportMetric(ms[p.name+"-uncached"]/ms[name], "ratio-to-before")
				}
			})
		}
	}
	// The finance views' own queries: a month of chargeback_monthly, a day of
	// chargeback_daily, an hour's GPU-hours and cost per team; each also over
	// chargeback_priced, as before migration 0012.
	for _, q := range []struct{ name, now, before string }{
		{"view-month", "SELECT * FROM chargeback_monthly WHERE month = '2026-11-01'",
			"SELECT * FROM (" + migrationView(b, "chargeback_monthly") + ") WHERE month = '2026-11-01'"},
		{"view-day", "SELECT * FROM chargeback_daily WHERE day = '2026-11-30'",
			"SELECT * FROM (" + migrationView(b, "chargeback_daily") + ") WHERE day = '2026-11-30'"},
		{"view-hour", hourByTeam("chargeback_job_priced"), hourByTeam("chargeback_priced")},
	} {
		for _, v := range []struct{ suffix, sql string }{{"", q.now}, {"-before", q.before}} {
			name := q.name + v.suffix
			b.Run(name, func(b *testing.B) {
				rows := 0
				for b.Loop() {
					res, err := s.Query(ctx, v.sql, nil)
					if err != nil {
						b.Fatalf("%v\n%s", err, v.sql)
					}
					rows = len(res.Rows)
				}
				if rows == 0 {
					b.Fatalf("%s: no rows", name)
				}
				ms[name] = float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N)
				b.ReportMetric(ms[name], "ms/query")
				if v.suffix != "" && ms[name] > 0 {
					b.ReportMetric(ms[q.name]/ms[name], "ratio-to-before")
				}
			})
		}
	}
}

// sameReport compares two reports field by field as JSON, numbers to 1e-9
// relative; it returns the first difference, or "".
func sameReport(a, b *billing.Report) string {
	var x, y any
	for _, p := range []struct {
		r   *billing.Report
		out *any
	}{{a, &x}, {b, &y}} {
		j, err := json.Marshal(p.r)
		if err != nil {
			return err.Error()
		}
		if err := json.Unmarshal(j, p.out); err != nil {
			return err.Error()
		}
	}
	return sameJSON("", x, y)
}

func sameJSON(path string, x, y any) string {
	switch xv := x.(type) {
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok || len(xv) != len(yv) {
			return path + ": different objects"
		}
		for k := range xv {
			if d := sameJSON(path+"."+k, xv[k], yv[k]); d != "" {
				return d
			}
		}
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			return fmt.Sprintf("%s: %d items against %v", path, len(xv), y)
		}
		for i := range xv {
			if d := sameJSON(fmt.Sprintf("%s[%d]", path, i), xv[i], yv[i]); d != "" {
				return d
			}
		}
	case float64:
		yv, ok := y.(float64)
		if !ok || math.Abs(xv-yv) > 1e-9*math.Max(1, math.Max(math.Abs(xv), math.Abs(yv))) {
			return fmt.Sprintf("%s: %v against %v", path, x, y)
		}
	default:
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("%s: %v against %v", path, x, y)
		}
	}
	return ""
}

// hourByTeam is an hour's GPU-hours and cost per team from view.
func hourByTeam(view string) string {
	return `SELECT team, sum(gpu_hours) AS gpu_hours, sum(cost) AS cost FROM ` + view + `
WHERE hour = '2026-11-30 12:00:00' AND job != '' GROUP BY team ORDER BY team`
}

// migrationView is the SELECT of a view as the migrations defined it before
// 0012 (frozen in analyzer/chargeback's testdata when the views left the
// migrations), runnable in the store's database.
func migrationView(tb testing.TB, view string) string {
	tb.Helper()
	const file = "views_before_0012.sql.txt"
	src, err := os.ReadFile(filepath.Join("..", "analyzer", "chargeback", "testdata", file))
	if err != nil {
		tb.Fatal(err)
	}
	head := "{{.DB}}." + view + " {{.OnCluster}} AS\n"
	i := strings.Index(string(src), head)
	if i < 0 {
		tb.Fatalf("%s: no view %s", file, view)
	}
	body := string(src)[i+len(head):]
	return strings.ReplaceAll(body[:strings.Index(body, ";\n")], "{{.DB}}.", "")
}

// beforeStore runs the console's queries as they were before migration 0012:
// billing.Build's chargeback queries over chargeback_priced instead of
// chargeback_job_priced, and failure_summary and job_output as their migrations
// (0010, 0011) defined them over chargeback_priced, inlined.
type beforeStore struct {
	store.Store
	failures, output string
}

func beforeRollup(tb testing.TB, s store.Store) beforeStore {
	// The report reads the period's attempts from job_failures_between and
	// job_output_between (0018); before, it read 0010's job_failures and 0011's
	// job_output whole and kept the period's.
	failures := "(SELECT * FROM (" + migrationView(tb, "job_failures") +
		") WHERE end_time >= {from:DateTime64(3, 'UTC')} AND end_time < {to:DateTime64(3, 'UTC')})"
	return beforeStore{Store: s, failures: failures, output: migrationView(tb, "job_output")}
}

func (b beforeStore) Query(ctx context.Context, sql string, p store.Params) (*store.Result, error) {
	r := strings.NewReplacer(
		"FROM chargeback_job_priced AS c", "FROM chargeback_priced AS c",
		"sum(c.sm_active_weighted) / nullIf(sum(c.sm_active_gpu_hours), 0) AS sm_active_mean",
		"sumIf(c.gpu_hours * c.sm_active_mean, c.sm_active_mean IS NOT NULL) / nullIf(sumIf(c.gpu_hours, c.sm_active_mean IS NOT NULL), 0) AS sm_active_mean",
		"FROM job_failures_between(from = {from:DateTime64(3, 'UTC')}, to = {to:DateTime64(3, 'UTC')}) AS f", "FROM "+b.failures+" AS f",
		"FROM job_output_between(from = {from:DateTime64(3, 'UTC')}, to = {to:DateTime64(3, 'UTC')})\n",
		"FROM (SELECT * FROM ("+b.output+") WHERE end_time >= {from:DateTime64(3, 'UTC')} AND end_time < {to:DateTime64(3, 'UTC')}) AS job_output\n")
	sql = r.Replace(sql)
	if strings.Contains(sql, "chargeback_job_priced") || strings.Contains(sql, "job_failures_between") || strings.Contains(sql, "job_output_between") {
		return nil, fmt.Errorf("the before-0012 form of a query is not known: %.200s", sql)
	}
	return b.Store.Query(ctx, sql, p)
}
