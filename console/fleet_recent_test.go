package console

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestFleetNowView(t *testing.T) {
	wall := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		from time.Time
		want string
	}{
		{wall.Add(-5 * time.Minute), "gpu_state_recent"},
		{wall.Add(-recentKept + time.Minute), "gpu_state_recent"},
		{wall.Add(time.Hour), "gpu_state_recent"}, // a clock ahead of the wall's
		{wall.Add(-recentKept), "gpu_state_between"},
		{wall.Add(-7 * 24 * time.Hour), "gpu_state_between"},
	} {
		if got := fleetNowView(c.from, wall); got != c.want {
			t.Errorf("fleetNowView(%v before the wall clock) = %s, want %s", wall.Sub(c.from), got, c.want)
		}
	}
}

// TestFleetReadsRecentSamples: with the data's clock at the wall's, the fleet
// page's state now comes from gpu_state_minute (given a memory figure other
// than gpu_samples' for the same minutes, to tell them apart); with the clock
// a week back, from gpu_samples.
func TestFleetReadsRecentSamples(t *testing.T) {
	s := chdbtest.Open(t)
	ctx := context.Background()
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Minute)
	old := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hourly := func(at time.Time, uuid string) {
		t.Helper()
		hour := at.Truncate(time.Hour).Format(time.DateTime)
		if err := s.Exec(ctx, fmt.Sprintf(`INSERT INTO gpu_hour (hour, gpu_uuid, cluster, node, card, mig_profile, samples, activity_samples, active_samples, sm_active_sum, sm_active_samples)
VALUES ('%s', '%s', 'c1', 'n1', 'H100-80GB', '', 4, 4, 4, 2, 4)`, hour, uuid), nil); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(at time.Time, uuid string, fbUsed int) {
		t.Helper()
		q := fmt.Sprintf(`INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, model, card, fb_total_mib, fb_used_mib, sm_active, power_w, temp_c)
SELECT toDateTime64('%s', 3, 'UTC') - toIntervalSecond(number * 15), 'c1', 'n1', '%s', 0, 'NVIDIA H100', 'H100-80GB', 81920, %d, 0.5, 300, 60
FROM numbers(4)`, at.Format(time.DateTime), uuid, fbUsed)
		if err := s.Exec(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
		hourly(at, uuid)
	}
	// The same GPU's minute now: one memory figure in each table (gpu_state_minute
	// is the rollup ingest writes); and a week ago, in gpu_samples only.
	if err := s.Exec(ctx, fmt.Sprintf(`INSERT INTO gpu_state_minute (minute, gpu_uuid, gpu_index, model, driver_version, fb_total_mib,
    fb_used_mib_max, activity_sum, activity_samples, power_w_sum, power_samples, temp_c_max, xid_max, last_ts)
VALUES ('%s', 'GPU-a', 0, 'NVIDIA H100', '', 81920, 12345, 2, 4, 1200, 4, 60, 0, '%s')`,
		now.Add(-2*time.Minute).Format(time.DateTime), now.Add(-time.Minute-15*time.Second).Format(time.DateTime)), nil); err != nil {
		t.Fatal(err)
	}
	hourly(now.Add(-time.Minute), "GPU-a")
	insert(now.Add(-time.Minute), "GPU-a", 23456)
	insert(old.Add(-time.Minute), "GPU-a", 34567)
	for _, c := range []struct {
		clock      time.Time
		shown, not string
	}{
		{now, "12345 / 81920", "23456 /"},
		{old, "34567 / 81920", "12345 /"},
	} {
		cl := c.clock
		cons, err := New(DefaultConfig(), s, newGuard(t), WithClock(func() time.Time { return cl }))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(cons.Handler())
		code, body, _ := get(t, srv, "/fleet", "tok-admin")
		srv.Close()
		if code != 200 || !strings.Contains(body, c.shown) || strings.Contains(body, c.not) {
			i := max(strings.Index(body, "<h2>GPUs</h2>"), 0)
			t.Errorf("fleet page at %v: %d; want the memory %s MiB shown and not %s\n%.3000s", cl, code, c.shown, c.not, body[i:])
		}
	}
}

// BenchmarkFleetStateNow asks the fleet page's state-now question (each GPU's
// last five minutes) of 10,000 GPUs sampled every 10 s, after 1, 2 and 4 hours
// of the day, of both views, once the background merges have joined the day's
// parts (OPTIMIZE … FINAL stands in for them): gpu_state_between reads
// gpu_samples (sorted by GPU, partitioned by day: the day so far is read),
// gpu_state_recent reads gpu_state_minute (per GPU and minute, sorted by
// minute: the window's minutes are read). Reported: ms per question of each, and their ratio in the same run.
func BenchmarkFleetStateNow(b *testing.B) {
	s := chdbtest.Open(b)
	ctx := context.Background()
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		b.Fatal(err)
	}
	const gpus = 10000
	// The day starts two hours before now, so the recent table keeps it all.
	day := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Hour)
	filled := 0
	for _, hours := range []int{1, 2, 4} {
		for ; filled < hours; filled++ {
			for k := range 6 { // an hour in inserts of 10 minutes, as ingest's batches add up
				start := day.Add(time.Duration(filled)*time.Hour + time.Duration(k)*10*time.Minute)
				q := fmt.Sprintf(`INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, fb_used_mib, sm_active, gpu_util, power_w, temp_c)
SELECT toDateTime64('%s', 3, 'UTC') + toIntervalSecond(intDiv(number, %d) * 10), 'c', 'n' || toString(intDiv(number %% %d, 8)),
    'GPU-' || toString(number %% %d), number %% 8, number %% 80000, (number %% 100) / 100, (number %% 97) / 97, 300, 60
FROM numbers(%d)`, start.Format(time.DateTime), gpus, gpus, gpus, gpus*60)
				if err := s.Exec(ctx, q, nil); err != nil {
					b.Fatal(err)
				}
				// …and rolled up into gpu_state_minute, as ingest does batch by batch.
				if err := s.Exec(ctx, schemas.GPUStateMinuteSQL(s.Database()), store.Params{"from": tsParam(start), "to": tsParam(start.Add(10 * time.Minute))}); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, table := range []string{"gpu_samples", "gpu_state_minute"} {
			if err := s.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL", nil); err != nil {
				b.Fatal(err)
			}
		}
		end := day.Add(time.Duration(hours) * time.Hour)
		p := store.Params{"from": tsParam(end.Add(-5 * time.Minute)), "to": tsParam(end)}
		ms := map[string]float64{}
		for _, view := range []string{"gpu_state_between", "gpu_state_recent"} {
			b.Run(fmt.Sprintf("%dh/%s", hours, view), func(b *testing.B) {
				for b.Loop() {
					res, err := s.Query(ctx, fleetNowSQL(view), p)
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Rows) != gpus {
						b.Fatalf("%s: %d GPUs, want %d", view, len(res.Rows), gpus)
					}
				}
				ms[view] = float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N)
				b.ReportMetric(ms[view], "ms/question")
				if view == "gpu_state_recent" && ms[view] > 0 {
					b.ReportMetric(ms["gpu_state_between"]/ms[view], "between/recent")
				}
			})
		}
	}
}
