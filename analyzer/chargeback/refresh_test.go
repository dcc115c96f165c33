package chargeback

import (
	"context"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// queryFloat returns the first column of the first row of q.
func queryFloat(t *testing.T, s store.Store, q string) float64 {
	t.Helper()
	res, err := s.Query(t.Context(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 {
		t.Fatalf("%s: no rows", q)
	}
	f, err := res.Float(0, res.Columns[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRefresh checks that the hourly table behind the views is idempotent, picks
// up late job events within the lookback, rewrites only the hours that changed,
// and never shows rows of an unrecorded (crashed) refresh.
func TestRefresh(t *testing.T) {
	ctx := t.Context()
	s := openMigrated(t)
	// s1's end event (03:00) arrives late: until then s1 still holds GPU-c.
	var late schemas.JobEvent
	var events []schemas.JobEvent
	for _, e := range tinyJobEvents() {
		if e.Job == "s1" && e.Event == schemas.EventEnd {
			late = e
			continue
		}
		events = append(events, e)
	}
	loadTinyFleetWith(t, s, events)
	s1Hours := "SELECT sum(gpu_hours) FROM chargeback_daily WHERE project = 'feed-ranking'"
	logRows := "SELECT count() FROM chargeback_refreshes"

	if err := Refresh(ctx, s, tinyTo.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := queryFloat(t, s, s1Hours); !near(got, 2.75) {
		t.Errorf("s1 before its end event: %v GPU-hours, want 2.75 (1 + 0.75 shared + 1 to the period's end)", got)
	}
	if got := queryFloat(t, s, "SELECT max(hour) = '2026-03-01 03:00:00' FROM chargeback_refreshes"); got != 1 {
		t.Errorf("refreshed up to the wrong hour: only closed hours up to until count")
	}
	first := queryFloat(t, s, logRows)
	if first != 5 { // 23:00 (first data) to 03:00
		t.Errorf("%v hours refreshed, want 5", first)
	}

	// Nothing changed: nothing is rewritten.
	if err := Refresh(ctx, s, tinyTo); err != nil {
		t.Fatal(err)
	}
	if got := queryFloat(t, s, logRows); got != first {
		t.Errorf("an unchanged refresh wrote %v hours", got-first)
	}

	// The late end event: the next refresh corrects hour 03:00 only.
	l := ingest.NewLoader(s, 10)
	if err := l.AddJobs(ctx, []schemas.JobEvent{late}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Refresh(ctx, s, tinyTo); err != nil {
		t.Fatal(err)
	}
	if got := queryFloat(t, s, s1Hours); !near(got, 1.75) {
		t.Errorf("s1 after its end event: %v GPU-hours, want 1.75", got)
	}
	if got := queryFloat(t, s, logRows); got != first+1 {
		t.Errorf("the late event rewrote %v hours, want 1 (03:00)", got-first)
	}

	// A refresh that died after writing rows but before recording them.
	total := "SELECT sum(gpu_hours) FROM chargeback_daily"
	before := queryFloat(t, s, total)
	if err := s.Exec(ctx, `INSERT INTO chargeback_hourly (hour, gpu_uuid, job, generation, refreshed_at, gpu_hours)
		VALUES ('2026-03-01 01:00:00', 'GPU-a', 'train-1', generateUUIDv4(), now64(3), 100)`, nil); err != nil {
		t.Fatal(err)
	}
	if got := queryFloat(t, s, total); !near(got, before) {
		t.Errorf("an unrecorded generation changed the views: %v → %v GPU-hours", before, got)
	}

	// RefreshRange recomputes on demand, and the views agree with Compute.
	if err := RefreshRange(ctx, s, tinyFrom, tinyTo); err != nil {
		t.Fatal(err)
	}
	rows, err := Compute(ctx, s, tinyFrom, tinyTo)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, r := range rows {
		sum += r.GPUHours
	}
	if got := queryFloat(t, s, total); !near(got, sum) {
		t.Errorf("views %v GPU-hours, Compute %v", got, sum)
	}
}

// TestRollupsDeduplicate checks that a batch ingest inserts twice with the same
// deduplication tokens (a redelivered NATS message) is counted once in the raw
// tables and in the rollups, which ingest writes under the batch's own token for
// each (migrations 0020, 0021: no materialized view writes them any more, and a
// raw insert alone leaves them empty). Ingest's exactly-once tests compare its
// rollups with the samples stored (assertRollupMatchesView).
func TestRollupsDeduplicate(t *testing.T) {
	ctx := t.Context()
	s := openMigrated(t)
	gpu := func() *store.Block {
		ts, uuid, card := store.NewDateTime64Ms("ts"), store.NewLowCardinalityString("gpu_uuid"), store.NewLowCardinalityString("card")
		gr, energy := store.NewNullableFloat32("gr_engine_active"), store.NewUInt64("energy_mj")
		for i := range 6 {
			ts.Append(tinyFrom.Add(time.Duration(i) * 10 * time.Second).UnixMilli())
			uuid.Append("GPU-a")
			card.Append("H100-80GB")
			gr.Append(float32(i) / 10)
			energy.Append(uint64(1000 * i))
		}
		return store.NewBlock(ts, uuid, card, gr, energy)
	}
	proc := func() *store.Block {
		ts, uuid, job, fb := store.NewDateTime64Ms("ts"), store.NewLowCardinalityString("gpu_uuid"), store.NewLowCardinalityString("job"), store.NewUInt32("fb_used_mib")
		for i := range 6 {
			ts.Append(tinyFrom.Add(time.Duration(i) * 10 * time.Second).UnixMilli())
			uuid.Append("GPU-a")
			job.Append("j")
			fb.Append(1000)
		}
		return store.NewBlock(ts, uuid, job, fb)
	}
	minute := func() *store.Block {
		m, uuid, samples, active := store.NewDateTime("minute"), store.NewLowCardinalityString("gpu_uuid"), store.NewUInt64("samples"), store.NewUInt64("active_samples")
		m.Append(uint32(tinyFrom.Unix()))
		uuid.Append("GPU-a")
		samples.Append(6)
		active.Append(5)
		return store.NewBlock(m, uuid, samples, active)
	}
	for range 2 {
		if err := s.Insert(ctx, "gpu_samples", gpu(), "nats-gpu-1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Insert(ctx, "process_samples", proc(), "nats-proc-1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Insert(ctx, "gpu_minute", minute(), "nats-gpu_minute-1"); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]float64{
		"SELECT count() FROM gpu_samples":            6,
		"SELECT sum(samples) FROM gpu_minute":        6,
		"SELECT sum(active_samples) FROM gpu_minute": 5,
		"SELECT count() FROM gpu_hour":               0, // ingest's to write, from its batch
		"SELECT count() FROM process_samples":        6,
		"SELECT count() FROM process_minute":         0,
	} {
		if got := queryFloat(t, s, q); got != want {
			t.Errorf("%s = %v, want %v", q, got, want)
		}
	}
}

// countingStore counts the queries a refresh sends.
type countingStore struct {
	store.Store
	queries int
}

func (c *countingStore) Query(ctx context.Context, q string, p store.Params) (*store.Result, error) {
	c.queries++
	return c.Store.Query(ctx, q, p)
}

// TestRefreshFollowsDataNotSpan refreshes up to a year after the tiny fleet's few
// hours: the queries sent are those of the hours with data (one chunk), not one
// chunk per day of the year.
func TestRefreshFollowsDataNotSpan(t *testing.T) {
	ctx := t.Context()
	s := openMigrated(t)
	loadTinyFleet(t, s)
	c := &countingStore{Store: s}
	if err := Refresh(ctx, c, tinyTo.Add(365*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c.queries > 10 {
		t.Errorf("a refresh over a year with 5 hours of data sent %d queries, want a handful", c.queries)
	}
	// The one chunk recomputed is the day from the first hour with data; the
	// year after it is not visited.
	if got := queryFloat(t, s, "SELECT count() FROM chargeback_refreshes"); got > 24 {
		t.Errorf("%v hours refreshed, want at most the day holding the data", got)
	}
}
