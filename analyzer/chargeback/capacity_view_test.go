package chargeback

import (
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestCapacityStopsAtLastSample: a job still queued when the samples stop is not
// counted as demand beyond the last sampled hour (it used to be, up to now, while
// capacity, which comes from samples, showed 0), and every row names its cluster.
func TestCapacityStopsAtLastSample(t *testing.T) {
	s := openMigrated(t)
	events := append(tinyJobEvents(), schemas.JobEvent{
		TimeMs: at(3, 30).UnixMilli(), Job: "q-1", Event: schemas.EventSubmit, Source: schemas.SourceKubernetes,
		Cluster: "c1", Team: "nlp", Project: "chat", Pool: "training-prod", GPUs: 2, Card: "H100-80GB", Attempt: 1,
	})
	loadTinyFleetWith(t, s, events)
	if err := Refresh(t.Context(), s, tinyTo.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got := table(t, s, "SELECT hour, cluster, card, capacity_gpus, queued_gpus, demand_gpus FROM capacity WHERE card = 'H100-80GB' ORDER BY hour", nil)
	// Samples run from 23:00 to 03:59: the last row is 03:00, with q-1 queued
	// for its last 30 minutes (2 GPUs × 0.5 h); before, q-1 stayed queued in
	// every hour up to now.
	want := `hour | cluster | card | capacity_gpus | queued_gpus | demand_gpus
2026-02-28 23:00:00 | c1 | H100-80GB | 1 | 0 | 0
2026-03-01 00:00:00 | c1 | H100-80GB | 1 | 0.5 | 1
2026-03-01 01:00:00 | c1 | H100-80GB | 1 | 0.333333333333 | 0.833333333333
2026-03-01 02:00:00 | c1 | H100-80GB | 1 | 0 | 1
2026-03-01 03:00:00 | c1 | H100-80GB | 1 | 1 | 2
`
	if got != want {
		t.Errorf("capacity:\n%s\nwant:\n%s", got, want)
	}
}
