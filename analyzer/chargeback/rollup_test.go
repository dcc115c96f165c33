package chargeback

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/store"
)

// viewBefore returns the SELECT of a view as an earlier migration defined it
// (before 0012 moved it onto chargeback_job_priced), runnable in the test's
// database; testdata/views_before_0012.sql.txt keeps those definitions.
func viewBefore(t *testing.T, file, view string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/views_before_0012.sql.txt")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	head := "{{.DB}}." + view + " {{.OnCluster}} AS\n"
	i := strings.Index(src, "-- "+file+"\n")
	if j := strings.Index(src[max(i, 0):], head); i < 0 || j < 0 {
		i = -1
	} else {
		i += j
	}
	if i < 0 {
		t.Fatalf("%s: no view %s", file, view)
	}
	body := src[i+len(head):]
	body = body[:strings.Index(body, ";\n")]
	if strings.Contains(body, "chargeback_job_priced") {
		t.Fatalf("%s: view %s already reads the job rollup", file, view)
	}
	return strings.ReplaceAll(body, "{{.DB}}.", "")
}

// programXIDAsBefore is job_failures' reason as migrations 0010–0016 gave it:
// 0017 classifies a failed attempt whose latest XID is one the program usually
// causes by its exit code instead of as gpu_xid.
const programXIDAsBefore = `if(status = 'failed' AND xid_samples > 0 AND xid IN (13, 31, 43)
    AND reason IN ('killed', 'crashed', 'user_error', 'unknown'), 'gpu_xid', reason)`

// TestJobRollupMatchesPriced loads a simulated 16 hours of the default fleet (MIG
// slices, a time-sliced GPU shared by two jobs, failures and reruns, a price
// change at 13:00), prices energy and queue wait too, refreshes, then corrects a
// price and supersedes one hour with a new generation, and checks that every view
// migration 0012 moved onto chargeback_job_priced gives the figures its earlier
// definition over chargeback_priced gives, and that chargeback_job_priced is
// chargeback_priced summed per (hour, job, card, cluster).
func TestJobRollupMatchesPriced(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 16 simulated hours (about 10 s); -short skips it")
	}
	ctx := t.Context()
	s := openMigrated(t)
	cfg := sim.DefaultConfig()
	cfg.Start = simStart
	from, to := simStart, simStart.Add(16*time.Hour)
	loadSim(t, s, cfg, 16*time.Hour)
	for _, q := range []string{
		simPrices,
		`INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note)
SELECT 'energy:' || cluster, '2025-01-01 00:00:00', NULL, 0.25, 'USD', '' FROM (SELECT DISTINCT cluster FROM gpu_hour)`,
		`INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note)
SELECT 'queue-wait:' || pool, '2025-01-01 00:00:00', NULL, 0.5, 'USD', '' FROM (SELECT DISTINCT pool FROM jobs WHERE pool != '' LIMIT 1)`,
	} {
		if err := s.Exec(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := Refresh(ctx, s, to); err != nil {
		t.Fatal(err)
	}
	// A price correction after the refresh: both paths join prices when read.
	if err := s.Exec(ctx, `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note)
VALUES ('A100-80GB', '2026-01-05 04:00:00', NULL, 2.45, 'USD', 'correction')`, nil); err != nil {
		t.Fatal(err)
	}
	// Hour 05:00 superseded by a new generation (its GPU-hours doubled), written
	// as Refresh writes one: rows, their rollup, then the log row.
	h5 := from.Add(5 * time.Hour)
	gen := uuid.NewString()
	p := store.Params{"gen": gen, "h": timeParam(h5)}
	if err := s.Exec(ctx, `INSERT INTO chargeback_hourly (hour, gpu_uuid, job, generation, refreshed_at, cluster, node, card, mig_profile,
    gpu_weight, gpu_hours, used_gpu_hours, idle_gpu_hours, unmeasured_gpu_hours, energy_kwh, sm_active_mean, gr_engine_active_mean,
    queue_wait_hours, unobserved_gpu_hours)
SELECT hour, gpu_uuid, job, {gen:UUID}, now64(3), cluster, node, card, mig_profile, gpu_weight, 2 * gpu_hours, 2 * used_gpu_hours,
    2 * idle_gpu_hours, 2 * unmeasured_gpu_hours, energy_kwh, sm_active_mean, gr_engine_active_mean, queue_wait_hours, unobserved_gpu_hours
FROM chargeback_hourly_current WHERE hour = {h:DateTime64(3, 'UTC')}`, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteRollup(ctx, s, gen, h5, h5.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// And a generation written but never recorded, which neither path may count.
	if err := WriteRollup(ctx, s, uuid.NewString(), from, to); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, `INSERT INTO chargeback_refreshes (hour, generation, refreshed_at, row_count, checksum)
VALUES ({h:DateTime64(3, 'UTC')}, {gen:UUID}, now64(3), 1, 1)`, p); err != nil {
		t.Fatal(err)
	}
	run := func(q string) *store.Result {
		t.Helper()
		res, err := s.Query(ctx, q, nil)
		if err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		return res
	}
	if got := queryFloat(t, s, "SELECT sum(gpu_hours) FROM chargeback_job_priced WHERE hour = '"+h5.Format(time.DateTime)+"'"); got <= 0 {
		t.Fatalf("hour %s: %v GPU-hours in chargeback_job_priced", h5, got)
	}
	if n := queryFloat(t, s, "SELECT count() FROM chargeback_priced WHERE failed_rerun = 1"); n == 0 {
		t.Error("no failed-rerun rows: the test proves less than it claims")
	}
	if n := queryFloat(t, s, "SELECT count() FROM chargeback_job_priced WHERE queue_wait_pool_priced = 1 AND queue_wait_gpu_hours > 0"); n == 0 {
		t.Error("no queue wait priced by pool: the test proves less than it claims")
	}

	byCluster := func(q string) string { return "SELECT cluster, * EXCEPT (cluster) FROM (" + q + ")" }
	for _, v := range []struct {
		file, view string
		keys       int
		lead       bool // cluster (the view's last column) leads, as a key
	}{
		{"0009_money_dimensions.sql", "chargeback_daily", 7, true},
		{"0009_money_dimensions.sql", "chargeback_monthly", 7, true},
		{"0009_money_dimensions.sql", "idle_cost", 8, true},
		{"0003_chargeback.sql", "unallocated_capacity", 3, false},
		{"0010_failures.sql", "job_failures", 1, false},
		{"0011_output.sql", "job_output", 1, false},
	} {
		before, now := "SELECT * FROM ("+viewBefore(t, v.file, v.view)+")", "SELECT * FROM "+v.view
		if v.view == "job_failures" {
			// 0014 appended the collector's evidence; the rest is compared.
			// 0017 gives a failed attempt whose latest XID is the program's
			// (13, 31, 43) its exit code's reason where 0010 said gpu_xid: map
			// it back, and count such rows below so the mapping is exercised.
			now = "SELECT * EXCEPT (oom_kills, ecc_uncorrected) REPLACE (" + programXIDAsBefore + " AS reason) FROM " + v.view
			if n := queryFloat(t, s, "SELECT count() FROM job_failures WHERE status = 'failed' AND xid_samples > 0 AND xid IN (13, 31, 43)"); n == 0 {
				t.Error("job_failures: no failed attempt with a program XID: the 0017 mapping is not exercised")
			}
		}
		if v.lead {
			before, now = byCluster(before), byCluster(now)
		}
		want, got := run(before), run(now)
		if len(want.Rows) == 0 {
			t.Errorf("%s: no rows", v.view)
		}
		sameRows(t, v.view+" over chargeback_job_priced vs over chargeback_priced", got, want, v.keys)
	}

	// The rollup row by row.
	const figures = `sum(gpu_hours), sum(used_gpu_hours), sum(idle_gpu_hours), sum(unmeasured_gpu_hours), sum(unobserved_gpu_hours),
    sum(energy_kwh), sum(queue_wait_hours), sum(cost), sum(idle_cost), sum(queue_wait_gpu_hours), sum(queue_wait_cost), sum(energy_cost),
    any(team), any(pool), any(failed_rerun), any(priced), any(currency), any(queue_wait_currency), any(energy_currency)`
	want := run(`SELECT hour, job, card, cluster, ` + figures + `,
    count(), sumIf(gpu_hours, sm_active_mean IS NOT NULL), sumIf(gpu_hours * sm_active_mean, sm_active_mean IS NOT NULL),
    max(60 * unmeasured_gpu_hours / gpu_weight)
FROM chargeback_priced GROUP BY hour, job, card, cluster`)
	got := run(`SELECT hour, job, card, cluster, ` + figures + `,
    sum(gpu_rows), sum(sm_active_gpu_hours), sum(sm_active_weighted), max(silent_minutes_max)
FROM chargeback_job_priced GROUP BY hour, job, card, cluster`)
	if len(want.Rows) < 100 || len(got.Rows) >= queryRows(t, s, "SELECT count() FROM chargeback_priced") {
		t.Errorf("%d rollup rows for %d GPU rows: the rollup does not roll up", len(got.Rows), len(want.Rows))
	}
	sameRows(t, "chargeback_job_priced vs chargeback_priced per (hour, job, card, cluster)", got, want, 4)

	// job_failures_between and job_output_between (0018) read each source for a
	// period's attempts only: they must give job_failures' and job_output's rows
	// of the attempts that ended in the period, on periods that cut through
	// running attempts, the whole run, and one with no attempt.
	for _, p := range []struct{ from, to time.Time }{
		{from.Add(4 * time.Hour), from.Add(9 * time.Hour)}, {from.Add(12*time.Hour + 30*time.Minute), from.Add(13 * time.Hour)},
		{from, to}, {to.Add(24 * time.Hour), to.Add(48 * time.Hour)},
	} {
		pp := store.Params{"from": timeParam(p.from), "to": timeParam(p.to)}
		q := func(sql string) *store.Result {
			t.Helper()
			res, err := s.Query(ctx, sql, pp)
			if err != nil {
				t.Fatalf("%v\n%s", err, sql)
			}
			return res
		}
		for _, v := range []string{"job_failures", "job_output"} {
			whole := q(`SELECT * FROM ` + v + ` WHERE end_time >= {from:DateTime64(3, 'UTC')} AND end_time < {to:DateTime64(3, 'UTC')}`)
			period := q(`SELECT * FROM ` + v + `_between(from = {from:DateTime64(3, 'UTC')}, to = {to:DateTime64(3, 'UTC')})`)
			if p.from.Before(to) && len(whole.Rows) == 0 {
				t.Errorf("%s %s–%s: no attempt ended: the period proves nothing", v, p.from, p.to)
			}
			sameRows(t, fmt.Sprintf("%s_between %s–%s vs %s", v, p.from.Format(time.TimeOnly), p.to.Format(time.TimeOnly), v), period, whole, 1)
		}
	}
}

func queryRows(t *testing.T, s store.Store, q string) int { return int(queryFloat(t, s, q)) }

// TestRollupSelectInMigration: migration 0012's backfill sums the rows as
// WriteRollup and BackfillRollup do.
func TestRollupSelectInMigration(t *testing.T) {
	b, err := os.ReadFile("../../schemas/migrations/0012_job_rollup.sql")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(string(b), "{{.DB}}.", "")
	if !strings.Contains(src, "INSERT INTO chargeback_job_hourly\n"+backfillSelect+";") {
		t.Errorf("migration 0012's backfill is not BackfillRollup's:\n%s", backfillSelect)
	}
}
