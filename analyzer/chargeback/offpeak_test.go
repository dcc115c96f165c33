package chargeback

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
)

// offPeakWeek is a week (Mon 2 March 2026 on) whose answer is known:
//
//	batch queue, inference-batch pool, L40S-48GB, 1 GPU: every day one job submitted
//	at 14:00 that waits 3.2 h and one at 23:00 that waits 0.4 h → each day job is
//	recommended the night: ~0.4 h, 2.8 h saved, 1.4 USD at 0.50 USD a waiting GPU-hour;
//	train queue, training-prod pool, H100-80GB, 4 GPUs: day jobs at 10:00 wait 2 h,
//	night jobs 1.5 h → not half as long: nothing recommended;
//	dev queue and pool, A100-40GB: day jobs at 15:00 wait 0.5 h, night jobs 0.1 h →
//	neither batch nor an hour queued: nothing recommended;
//	one batch job at 16:00 that waited 0.3 h → saves less than a quarter hour: nothing;
//	notebooks (workload dev) in the nb queue, day 4 h, night 0.2 h → interactive: nothing.
func offPeakWeek() []schemas.JobEvent {
	monday := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	var out []schemas.JobEvent
	add := func(job, queue, pool, card string, gpus uint32, submit time.Time, wait time.Duration) {
		workload := schemas.WorkloadBatchInference
		if queue == "nb" {
			workload = schemas.WorkloadDev
		}
		out = append(out,
			schemas.JobEvent{TimeMs: submit.UnixMilli(), Job: job, Event: schemas.EventSubmit, Source: schemas.SourceSlurm,
				Cluster: "c1", Team: "recsys", Project: "p", Queue: queue, Pool: pool, ModelName: "m", GPUs: gpus, Card: card, Attempt: 1,
				Workload: workload},
			schemas.JobEvent{TimeMs: submit.Add(wait).UnixMilli(), Job: job, Event: schemas.EventStart, Source: schemas.SourceSlurm,
				Cluster: "c1", Nodes: []string{"n1"}, GPUUUIDs: []string{"GPU-" + job}, Attempt: 1})
	}
	for d := range 7 {
		day := monday.AddDate(0, 0, d)
		add(fmt.Sprintf("batch-day-%d", d), "batch", "inference-batch", "L40S-48GB", 1, day.Add(14*time.Hour), 192*time.Minute)
		add(fmt.Sprintf("batch-night-%d", d), "batch", "inference-batch", "L40S-48GB", 1, day.Add(23*time.Hour), 24*time.Minute)
		add(fmt.Sprintf("train-day-%d", d), "train", "training-prod", "H100-80GB", 4, day.Add(10*time.Hour), 2*time.Hour)
		add(fmt.Sprintf("train-night-%d", d), "train", "training-prod", "H100-80GB", 4, day.Add(22*time.Hour), 90*time.Minute)
		add(fmt.Sprintf("dev-day-%d", d), "dev", "dev", "A100-40GB", 1, day.Add(15*time.Hour), 30*time.Minute)
		add(fmt.Sprintf("dev-night-%d", d), "dev", "dev", "A100-40GB", 1, day.Add(2*time.Hour), 6*time.Minute)
		add(fmt.Sprintf("nb-day-%d", d), "nb", "dev", "A100-40GB", 1, day.Add(11*time.Hour), 4*time.Hour)
		add(fmt.Sprintf("nb-night-%d", d), "nb", "dev", "A100-40GB", 1, day.Add(23*time.Hour), 12*time.Minute)
	}
	add("batch-short", "batch", "inference-batch", "L40S-48GB", 1, monday.Add(16*time.Hour), 18*time.Minute)
	return out
}

// TestOffPeak: the seven batch day jobs, and only they, are told to move to the
// night, each with the figure the week's night jobs give.
func TestOffPeak(t *testing.T) {
	ctx := context.Background()
	s := openMigrated(t)
	l := ingest.NewLoader(s, 100000)
	if err := l.AddJobs(ctx, offPeakWeek()); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note) VALUES
        ('H100-80GB', '2026-01-01 00:00:00', NULL, 4.00, 'USD', 'list'),
        ('queue-wait:inference-batch', '2026-01-01 00:00:00', NULL, 0.50, 'USD', 'opportunity cost')`, nil); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, `SELECT job, window_jobs, window_wait_hours, saved_gpu_hours, saved_cost, currency, recommendation
        FROM off_peak ORDER BY job`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 7 {
		t.Fatalf("off_peak has %d rows, want the 7 batch day jobs:\n%s", len(res.Rows), table(t, s, "SELECT job, recommendation FROM off_peak ORDER BY job", nil))
	}
	for i := range res.Rows {
		job, _ := res.String(i, "job")
		n, _ := res.Float(i, "window_jobs")
		wait, _ := res.Float(i, "window_wait_hours")
		saved, _ := res.Float(i, "saved_gpu_hours")
		cost, _ := res.Float(i, "saved_cost")
		cur, _ := res.String(i, "currency")
		rec, _ := res.String(i, "recommendation")
		if job != fmt.Sprintf("batch-day-%d", i) || n != 7 || fmt.Sprintf("%.3f %.3f %.3f %s", wait, saved, cost, cur) != "0.400 2.800 1.400 USD" {
			t.Errorf("row %d: %s window_jobs %v wait %.3f saved %.3f GPU-h %.3f %s; want batch-day-%d 7 0.400 2.800 1.400 USD", i, job, n, wait, saved, cost, cur, i)
		}
		if !strings.Contains(rec, "after 3.2 h queued; submitted in 22:00-07:00 UTC it would have waited ~0.4 h (mean of 7 night-time jobs of queue batch on L40S-48GB)") {
			t.Errorf("%s: recommendation %q", job, rec)
		}
	}
	var b strings.Builder
	for _, q := range []string{
		"SELECT * FROM queue_wait_profile WHERE queue = 'batch' ORDER BY ALL",
		"SELECT * FROM off_peak ORDER BY job",
	} {
		fmt.Fprintf(&b, "-- %s\n%s\n", q, table(t, s, q, nil))
	}
	checkGolden(t, "offpeak_week.txt", b.String())
}
