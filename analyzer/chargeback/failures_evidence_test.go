package chargeback

import (
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// TestFailureEvidenceFromCollector checks what migration 0014 adds to
// job_failures: the node's collector puts OOM kills from the job's cgroup and
// uncorrectable ECC errors from its GPUs on its end event (collector/jobs.go),
// and a later end event without an end reason no longer hides an earlier one.
func TestFailureEvidenceFromCollector(t *testing.T) {
	ctx := t.Context()
	s := openMigrated(t)
	var evs []schemas.JobEvent
	// attempt adds an attempt on GPU-c from fromMin to toMin past 03:00 that the
	// scheduler ends with status and exit, after the collector's end event with
	// labels (nil: none).
	attempt := func(job string, fromMin, toMin int, status string, exit int32, collector map[string]string) {
		base := schemas.JobEvent{Job: job, Source: schemas.SourceKubernetes, Cluster: "c1", Attempt: 1}
		sub, start, end := base, base, base
		sub.TimeMs, sub.Event = at(3, fromMin).UnixMilli(), schemas.EventSubmit
		sub.Team, sub.Pool, sub.GPUs, sub.Card = "recsys", "inference-batch", 1, "L40S-48GB"
		start.TimeMs, start.Event, start.Nodes, start.GPUUUIDs = at(3, fromMin).UnixMilli(), schemas.EventStart, []string{"node-3"}, []string{"GPU-c"}
		end.TimeMs, end.Event, end.Status, end.ExitCode = at(3, toMin).UnixMilli(), schemas.EventEnd, status, exit
		evs = append(evs, sub, start, end)
		if collector != nil {
			c := base
			c.TimeMs, c.Event, c.Nodes, c.Labels = at(3, toMin).Add(-30e9).UnixMilli(), schemas.EventEnd, []string{"node-3"}, collector
			evs = append(evs, c)
		}
	}
	attempt("host-oom", 0, 10, schemas.StatusFailed, 137, map[string]string{schemas.LabelOOMKills: "2"})
	attempt("worker-oom-then-error", 10, 20, schemas.StatusFailed, 1, map[string]string{schemas.LabelOOMKills: "1"})
	attempt("kubelet-oom", 20, 30, schemas.StatusFailed, 137, map[string]string{schemas.LabelEndReason: "OOMKilled"})
	attempt("dbe", 30, 40, schemas.StatusFailed, 1, map[string]string{schemas.LabelECCUncorrected: "1", schemas.LabelECCCorrected: "40"})
	attempt("sbe-only", 40, 45, schemas.StatusFailed, 1, map[string]string{schemas.LabelECCCorrected: "40"})
	attempt("dbe-but-ok", 45, 50, schemas.StatusSucceeded, 0, map[string]string{schemas.LabelECCUncorrected: "1"})
	attempt("oom-cancelled", 50, 55, schemas.StatusCancelled, 143, map[string]string{schemas.LabelOOMKills: "1"})
	attempt("sigkill", 55, 59, schemas.StatusFailed, 137, nil)
	loadTinyFleetWith(t, s, append(tinyJobEvents(), evs...))
	if err := Refresh(ctx, s, tinyTo); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, "SELECT job, reason, oom_kills, ecc_uncorrected FROM job_failures WHERE job NOT IN ('train-1', 's1', 's2', 'nb-1') ORDER BY job", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		reason   string
		oom, ecc int64
	}{
		"host-oom":              {"oom_killed", 2, 0}, // 0010: killed
		"worker-oom-then-error": {"oom_killed", 1, 0}, // 0010: user_error
		"kubelet-oom":           {"oom_killed", 0, 0}, // 0010: killed (the scheduler's later end event had no reason)
		"dbe":                   {"gpu_ecc", 0, 1},    // 0010: user_error
		"sbe-only":              {"user_error", 0, 0}, // corrected errors are no failure
		"dbe-but-ok":            {"", 0, 1},
		"oom-cancelled":         {"cancelled", 1, 0},
		"sigkill":               {"killed", 0, 0},
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d attempts, want %d", len(res.Rows), len(want))
	}
	for i := range res.Rows {
		job, _ := res.String(i, "job")
		reason, _ := res.String(i, "reason")
		oom, _ := res.Int(i, "oom_kills")
		ecc, _ := res.Int(i, "ecc_uncorrected")
		w, ok := want[job]
		if !ok || reason != w.reason || oom != w.oom || ecc != w.ecc {
			t.Errorf("%s: reason %q, oom_kills %d, ecc_uncorrected %d; want %+v", job, reason, oom, ecc, w)
		}
	}
}
