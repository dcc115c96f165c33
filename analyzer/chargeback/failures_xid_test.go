package chargeback

import (
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
)

// TestProgramXIDs checks migration 0017: an attempt whose GPU logged an XID the
// program usually causes (13, 31, 43) takes the reason its exit code gives, not
// gpu_xid; a hardware XID (79: the GPU fell off the bus) stays gpu_xid and an ECC
// XID (48) gpu_ecc; the XID is kept as evidence either way.
func TestProgramXIDs(t *testing.T) {
	ctx := t.Context()
	s := openMigrated(t)
	var evs []schemas.JobEvent
	var gpus []schemas.GPUSample
	attempt := func(job, gpu string, fromMin, toMin int, exit int32, xid uint32) {
		base := schemas.JobEvent{Job: job, Source: schemas.SourceKubernetes, Cluster: "c1", Attempt: 1}
		sub, start, end := base, base, base
		sub.TimeMs, sub.Event = at(3, fromMin).UnixMilli(), schemas.EventSubmit
		sub.Team, sub.Pool, sub.GPUs, sub.Card = "vision", "training-exp", 1, "L40S-48GB"
		start.TimeMs, start.Event, start.Nodes, start.GPUUUIDs = at(3, fromMin).UnixMilli(), schemas.EventStart, []string{"node-9"}, []string{gpu}
		end.TimeMs, end.Event, end.Status, end.ExitCode = at(3, toMin).UnixMilli(), schemas.EventEnd, schemas.StatusFailed, exit
		evs = append(evs, sub, start, end)
		gs := schemas.NewGPUSample()
		gs.TimeMs, gs.Cluster, gs.Node, gs.GPUUUID = at(3, toMin-1).Add(30*time.Second).UnixMilli(), "c1", "node-9", gpu
		gs.Model, gs.Card, gs.FBTotalMiB, gs.XID = "test card", "L40S-48GB", 46068, xid
		gpus = append(gpus, gs)
	}
	attempt("xid13-exit1", "GPU-x1", 0, 10, 1, 13)
	attempt("xid31-segv", "GPU-x2", 0, 10, 139, 31)
	attempt("xid43-kill", "GPU-x3", 0, 10, 137, 43)
	attempt("xid79-exit1", "GPU-x4", 0, 10, 1, 79)
	attempt("xid48-exit1", "GPU-x5", 0, 10, 1, 48)
	loadTinyFleetWith(t, s, append(tinyJobEvents(), evs...))
	l := ingest.NewLoader(s, 1000)
	if err := l.AddSamples(ctx, &schemas.SampleBatch{Cluster: "c1", Node: "node-9", GPUs: gpus}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Refresh(ctx, s, tinyTo); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, "SELECT job, reason, xid FROM job_failures WHERE startsWith(job, 'xid') ORDER BY job", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"xid13-exit1": "user_error", "xid31-segv": "crashed", "xid43-kill": "killed",
		"xid79-exit1": "gpu_xid", "xid48-exit1": "gpu_ecc",
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d attempts, want %d", len(res.Rows), len(want))
	}
	for i := range res.Rows {
		job, _ := res.String(i, "job")
		reason, _ := res.String(i, "reason")
		xid, _ := res.Int(i, "xid")
		if reason != want[job] || xid == 0 {
			t.Errorf("%s: reason %q, xid %d; want %q with its XID kept", job, reason, xid, want[job])
		}
	}
}
