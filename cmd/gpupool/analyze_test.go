package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// traceStart is the fixture trace's first tick.
var traceStart = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

// fixtureGPU is one GPU of the fixture trace and what runs on it.
type fixtureGPU struct {
	uuid, model string
	fbTotal     uint32
	job, team   string
	pool        string
	pid         uint32
	// active is the engine activity while the job runs; jobEnd its end (from the
	// start); after it, zombieMiB (if set) stays held by the job's process with no
	// activity until the trace ends.
	active    float32
	jobEnd    time.Duration
	zombieMiB uint32
}

// writeFixtureTrace writes a 2-hour trace of one node sampled every 30 s: an idle
// job, a busy job, and a job that ends after 30 minutes leaving a process that
// holds memory and does nothing (a zombie).
func writeFixtureTrace(t *testing.T, path string) []fixtureGPU {
	t.Helper()
	const span = 2 * time.Hour
	gpus := []fixtureGPU{
		{uuid: "GPU-00000000-0000-0000-0000-00000000000a", model: "NVIDIA H100 80GB HBM3", fbTotal: 81559,
			job: "k8s/ml/idle-job", team: "ml", pool: "dev", pid: 101, active: 0, jobEnd: span},
		{uuid: "GPU-00000000-0000-0000-0000-00000000000b", model: "NVIDIA H100 80GB HBM3", fbTotal: 81559,
			job: "k8s/ml/busy-job", team: "ml", pool: "training-exp", pid: 102, active: 0.9, jobEnd: span},
		{uuid: "GPU-00000000-0000-0000-0000-00000000000c", model: "NVIDIA L40S", fbTotal: 46068,
			job: "k8s/vision/done-job", team: "vision", pool: "dev", pid: 103, active: 0.8, jobEnd: 30 * time.Minute, zombieMiB: 8000},
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := trace.NewWriter(f, strings.HasSuffix(path, ".gz"))
	for _, g := range gpus {
		base := schemas.JobEvent{Job: g.job, Cluster: "c1", Attempt: 1}
		sub, st := base, base
		sub.TimeMs, sub.Event, sub.Team, sub.Project, sub.Pool, sub.Queue = traceStart.UnixMilli(), schemas.EventSubmit, g.team, g.team+"-proj", g.pool, g.pool
		sub.Workload, sub.GPUs = schemas.WorkloadTraining, 1
		st.TimeMs, st.Event, st.Nodes, st.GPUUUIDs = traceStart.UnixMilli(), schemas.EventStart, []string{"n1"}, []string{g.uuid}
		for _, e := range []*schemas.JobEvent{&sub, &st} {
			if err := w.WriteJob(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	ended := map[string]bool{}
	for at := traceStart; !at.After(traceStart.Add(span)); at = at.Add(30 * time.Second) {
		b := &schemas.SampleBatch{Cluster: "c1", Node: "n1"}
		for i, g := range gpus {
			running := at.Before(traceStart.Add(g.jobEnd))
			if !running && !ended[g.job] {
				ended[g.job] = true
				e := schemas.JobEvent{Job: g.job, Cluster: "c1", Attempt: 1, TimeMs: traceStart.Add(g.jobEnd).UnixMilli(),
					Event: schemas.EventEnd, Status: schemas.StatusSucceeded}
				if err := w.WriteJob(&e); err != nil {
					t.Fatal(err)
				}
			}
			s := schemas.NewGPUSample()
			s.TimeMs, s.GPUUUID, s.GPUIndex, s.Model, s.FBTotalMiB = at.UnixMilli(), g.uuid, uint32(i), g.model, g.fbTotal
			s.PowerW, s.PCIeRxBytesPerS, s.PCIeTxBytesPerS, s.GPUUtil = 80, 0, 0, 0
			s.GrEngineActive, s.SMActive, s.DRAMActive, s.TensorActive = 0, 0, 0, 0
			mem := uint32(0)
			switch {
			case running:
				s.GrEngineActive, s.SMActive, s.DRAMActive, s.TensorActive, s.GPUUtil = g.active, g.active*0.9, g.active/3, g.active/2, g.active
				mem = 20000
			case g.zombieMiB > 0:
				mem = g.zombieMiB
			}
			s.FBUsedMiB = mem
			b.GPUs = append(b.GPUs, s)
			if mem > 0 {
				b.Processes = append(b.Processes, schemas.ProcessSample{TimeMs: s.TimeMs, GPUUUID: g.uuid, PID: g.pid,
					ProcessName: "python3", Job: g.job, FBUsedMiB: mem, SMUtil: s.SMActive, MemUtil: s.DRAMActive})
			}
		}
		if err := w.WriteBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return gpus
}

// TestAnalyzeTrace runs gpupool analyze --format json on a fixture trace and checks
// the findings and chargeback it prints.
func TestAnalyzeTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fixture.jsonl.gz")
	writeFixtureTrace(t, path)
	g := &Globals{DataDir: dir, CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	var out, errOut bytes.Buffer
	cmd := &AnalyzeCmd{Trace: path, Format: "json", out: &out, errOut: &errOut}
	if err := cmd.Run(g, t.Context()); err != nil {
		t.Fatalf("analyze: %v\nstderr:\n%s", err, errOut.String())
	}
	var rep struct {
		Findings []struct {
			Kind          string             `json:"kind"`
			Job           string             `json:"job"`
			Team          string             `json:"team"`
			Node          string             `json:"node"`
			GPUUUID       string             `json:"gpu_uuid"`
			PID           uint32             `json:"pid"`
			FirstSeen     time.Time          `json:"first_seen"`
			LastSeen      time.Time          `json:"last_seen"`
			Evidence      map[string]float64 `json:"evidence"`
			WasteGPUHours float64            `json:"waste_gpu_hours"`
			WasteCost     float64            `json:"waste_cost"`
		} `json:"findings"`
		Chargeback []struct {
			Team            string   `json:"team"`
			Project         string   `json:"project"`
			Job             string   `json:"job"`
			Card            string   `json:"card"`
			GPUHours        float64  `json:"gpu_hours"`
			IdleGPUHours    float64  `json:"idle_gpu_hours"`
			Cost            *float64 `json:"cost"`
			QueueWaitHours  *float64 `json:"queue_wait_hours"`
			FailedRerunCost *float64 `json:"failed_rerun_cost"`
			EnergyKWh       *float64 `json:"energy_kwh"`
		} `json:"chargeback"`
		PriceProblems []json.RawMessage `json:"price_problems"`
	}
	// Exactly one JSON object (json.Unmarshal refuses anything after it).
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	var idle, zombie bool
	for _, f := range rep.Findings {
		switch {
		case f.Kind == "idle" && f.Job == "k8s/ml/idle-job":
			idle = true
			if f.Team != "ml" || f.Node != "n1" || f.GPUUUID != "GPU-00000000-0000-0000-0000-00000000000a" ||
				f.WasteGPUHours <= 0.5 || f.WasteCost <= 0 || f.Evidence["window_minutes"] == 0 || f.FirstSeen.IsZero() || f.LastSeen.Before(f.FirstSeen) {
				t.Errorf("idle finding: %+v", f)
			}
		case f.Kind == "zombie" && f.PID == 103:
			zombie = true
			if f.Node != "n1" || f.GPUUUID != "GPU-00000000-0000-0000-0000-00000000000c" || f.WasteGPUHours <= 0 {
				t.Errorf("zombie finding: %+v", f)
			}
		case f.Job == "k8s/ml/busy-job":
			t.Errorf("the busy job has a finding: %+v", f)
		}
	}
	if !idle || !zombie {
		t.Errorf("want an idle finding for k8s/ml/idle-job and a zombie for PID 103; got %+v", rep.Findings)
	}
	want := map[string]struct {
		card  string
		hours float64
		idle  bool
	}{
		"k8s/ml/idle-job":     {"H100-80GB", 2, true},
		"k8s/ml/busy-job":     {"H100-80GB", 2, false},
		"k8s/vision/done-job": {"L40S-48GB", 0.5, false},
	}
	seen := map[string]bool{}
	for _, r := range rep.Chargeback {
		w, ok := want[r.Job]
		if !ok {
			continue
		}
		seen[r.Job] = true
		if r.Card != w.card || math.Abs(r.GPUHours-w.hours) > 0.01 || r.Cost == nil || *r.Cost <= 0 ||
			r.QueueWaitHours == nil || r.FailedRerunCost == nil || r.EnergyKWh == nil {
			t.Errorf("chargeback of %s: %+v, want %s for %v GPU-hours, priced", r.Job, r, w.card, w.hours)
		}
		if w.idle && math.Abs(r.IdleGPUHours-r.GPUHours) > 0.01 || !w.idle && r.IdleGPUHours > 0.01 {
			t.Errorf("idle GPU-hours of %s: %v of %v", r.Job, r.IdleGPUHours, r.GPUHours)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("chargeback rows for %v, want all of %v: %s", seen, want, out.String())
	}
	if len(rep.PriceProblems) != 0 {
		t.Errorf("price problems with the example price book: %s", rep.PriceProblems)
	}

	// The same trace as tables.
	out.Reset()
	cmd.Format = "table"
	if err := cmd.Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Findings (", "Findings by kind", "Cost by team", "k8s/ml/idle-job", "zombie"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table output lacks %q:\n%s", w, out.String())
		}
	}
}

// TestAnalyzeBadTrace: a line that breaks the format stops the analysis with its
// line number, unless --skip-bad-lines.
func TestAnalyzeBadTrace(t *testing.T) {
	dir := t.TempDir()
	good := `{"type":"gpu","ts":"2026-03-02T08:00:00Z","node":"n1","gpu_uuid":"GPU-1","model":"NVIDIA H100 80GB HBM3","fb_total_mib":81559,"fb_used_mib":0}` + "\n"
	bad := `{"type":"gpu","ts":"2026-03-02T08:00:30Z","node":"n1","gpu_uuid":"GPU-1","sm_active":7}` + "\n"
	path := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(path, []byte(good+good+bad+good), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Globals{DataDir: dir, CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	var out, errOut bytes.Buffer
	err := (&AnalyzeCmd{Trace: path, Format: "json", out: &out, errOut: &errOut}).Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "sm_active") || !strings.Contains(err.Error(), path) {
		t.Fatalf("bad trace: err = %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("a failed analysis printed a report: %s", out.String())
	}
	if err := (&AnalyzeCmd{Trace: path, Format: "json", SkipBadLines: true, out: &out, errOut: &errOut}).Run(g, t.Context()); err != nil {
		t.Fatalf("--skip-bad-lines: %v", err)
	}
	if !strings.Contains(errOut.String(), "line 3") {
		t.Errorf("the skipped line is not reported on stderr: %s", errOut.String())
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (&AnalyzeCmd{Trace: empty, Format: "json", out: &out, errOut: &errOut}).Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "no records") {
		t.Errorf("empty trace: %v", err)
	}
}

// TestAnalyzeJobsWithoutSamples: a trace with job events and no samples bills the
// job's GPU-hours as unobserved, never as used (it used to read as fully used:
// gpu_hours 4, idle 0), in the JSON and in the table.
func TestAnalyzeJobsWithoutSamples(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.jsonl")
	lines := `{"type":"job","ts":"2026-01-01T00:00:00Z","job":"slurm/c1/1","event":"start","cluster":"c1","team":"t1","project":"p1","gpus":2,"card":"H100-80GB","nodes":["n1"],"gpu_uuids":["GPU-a","GPU-b"]}
{"type":"job","ts":"2026-01-01T02:00:00Z","job":"slurm/c1/1","event":"end","cluster":"c1","status":"succeeded"}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Globals{DataDir: dir, CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	var out, errOut bytes.Buffer
	// The end event lies 2 h after the trace's clock with nothing after it: by
	// default a line in the future (refused); a job-only trace says how far it
	// may jump.
	if err := (&AnalyzeCmd{Trace: path, Format: "json", out: &out, errOut: &errOut}).Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "future skew") {
		t.Fatalf("an end event 2 h after the rest, nothing after it: %v, want refused as in the future", err)
	}
	out.Reset()
	if err := (&AnalyzeCmd{Trace: path, Format: "json", FutureSkew: 3 * time.Hour, out: &out, errOut: &errOut}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Chargeback []struct {
			Job        string  `json:"job"`
			GPUHours   float64 `json:"gpu_hours"`
			Used       float64 `json:"used_gpu_hours"`
			Idle       float64 `json:"idle_gpu_hours"`
			Unobserved float64 `json:"unobserved_gpu_hours"`
		} `json:"chargeback"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Chargeback) != 1 {
		t.Fatalf("chargeback rows: %+v", rep.Chargeback)
	}
	r := rep.Chargeback[0]
	if math.Abs(r.GPUHours-4) > 1e-6 || math.Abs(r.Unobserved-4) > 1e-6 || r.Used != 0 || r.Idle != 0 {
		t.Errorf("job without samples: %+v; want 4 GPU-hours, all unobserved", r)
	}
	out.Reset()
	if err := (&AnalyzeCmd{Trace: path, Format: "table", FutureSkew: 3 * time.Hour, out: &out, errOut: &errOut}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "used_gpu_hours") || !strings.Contains(out.String(), "unobserved_gpu_hours") {
		t.Errorf("the table does not show used and unobserved GPU-hours:\n%s", out.String())
	}
}
