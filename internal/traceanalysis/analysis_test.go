package traceanalysis

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/deploy"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

var t0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

// testConfig is the default configuration with the example price book and the
// test library.
func testConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Store.LibPath = chdbtest.LibPath()
	cfg.File = "fixture.jsonl"
	prices, err := pricebook.Parse(bytes.NewReader(deploy.PriceBookExample))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prices = prices
	return cfg
}

// fixtureTrace is 2 hours of one node sampled every 30 s: an idle job on one
// H100 and a busy one on another.
func fixtureTrace(t *testing.T) []byte {
	t.Helper()
	return fixtureTraceOf(t, 2*time.Hour, 30*time.Second)
}

// fixtureTraceOf is fixtureTrace over span, sampled every step.
func fixtureTraceOf(t *testing.T, span, step time.Duration) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, false)
	gpus := []struct {
		uuid, job string
		active    float32
	}{{"GPU-idle", "k8s/ml/idle", 0}, {"GPU-busy", "k8s/ml/busy", 0.9}}
	for _, g := range gpus {
		sub := schemas.JobEvent{Job: g.job, Cluster: "c1", Attempt: 1, TimeMs: t0.UnixMilli(), Event: schemas.EventSubmit,
			Team: "ml", Project: "ml-proj", Pool: "dev", Queue: "dev", Workload: schemas.WorkloadTraining, GPUs: 1}
		start := schemas.JobEvent{Job: g.job, Cluster: "c1", Attempt: 1, TimeMs: t0.UnixMilli(), Event: schemas.EventStart,
			Nodes: []string{"n1"}, GPUUUIDs: []string{g.uuid}}
		for _, e := range []*schemas.JobEvent{&sub, &start} {
			if err := w.WriteJob(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for at := t0; !at.After(t0.Add(span)); at = at.Add(step) {
		b := &schemas.SampleBatch{Cluster: "c1", Node: "n1"}
		for i, g := range gpus {
			s := schemas.NewGPUSample()
			s.TimeMs, s.GPUUUID, s.GPUIndex, s.Model, s.FBTotalMiB, s.FBUsedMiB = at.UnixMilli(), g.uuid, uint32(i), "NVIDIA H100 80GB HBM3", 81559, 20000
			s.PowerW, s.PCIeRxBytesPerS, s.PCIeTxBytesPerS = 80, 0, 0
			s.GrEngineActive, s.SMActive, s.DRAMActive, s.TensorActive, s.GPUUtil = g.active, g.active*0.9, g.active/3, g.active/2, g.active
			b.GPUs = append(b.GPUs, s)
			b.Processes = append(b.Processes, schemas.ProcessSample{TimeMs: s.TimeMs, GPUUUID: g.uuid, PID: uint32(100 + i),
				ProcessName: "python3", Job: g.job, FBUsedMiB: 20000, SMUtil: s.SMActive, MemUtil: s.DRAMActive})
		}
		if err := w.WriteBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRun(t *testing.T) {
	data := fixtureTrace(t)
	var updates []Progress
	a, err := New(testConfig(t), WithProgress(func(p Progress) { updates = append(updates, p) }))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(t.Context(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// Passes at 5 min, 10 min, … before the record after each, the last at the
	// trace's end (120 min).
	want := Span{File: "fixture.jsonl", Start: t0, End: t0.Add(2 * time.Hour), GPURows: 2 * 241, ProcessRows: 2 * 241,
		JobEvents: 4, Passes: 24, IntervalSeconds: 300}
	if rep.Trace != want {
		t.Errorf("span %+v\nwant %+v", rep.Trace, want)
	}
	var idle bool
	for _, f := range rep.Findings {
		switch {
		case f.Kind == schemas.KindIdle && f.Job == "k8s/ml/idle":
			idle = f.WasteGPUHours > 0.5 && f.WasteCost > 0 && f.Currency != ""
		case f.Job == "k8s/ml/busy":
			t.Errorf("the busy job has a finding: %+v", f)
		}
	}
	if !idle {
		t.Errorf("no priced idle finding for k8s/ml/idle: %+v", rep.Findings)
	}
	if len(rep.Chargeback) != 2 {
		t.Fatalf("chargeback %+v, want a row per job", rep.Chargeback)
	}
	for _, r := range rep.Chargeback {
		if math.Abs(r.GPUHours-2) > 0.01 || r.Cost == nil || *r.Cost <= 0 || r.Card != "H100-80GB" {
			t.Errorf("chargeback of %s: %+v, want 2 priced H100-80GB hours", r.Job, r)
		}
	}
	if len(rep.PriceProblems) != 0 || rep.LineErrors != nil {
		t.Errorf("price problems %v, line errors %v", rep.PriceProblems, rep.LineErrors)
	}
	last := updates[len(updates)-1]
	if len(updates) < 2 || !last.Done || last.BytesRead != int64(len(data)) || last.Passes != 24 || !last.At.Equal(want.End) ||
		last.Rows != want.GPURows+want.ProcessRows+want.JobEvents || updates[0].Done {
		t.Errorf("progress: %d updates, the last %+v", len(updates), last)
	}
}

// TestRunGap: a trace of two stretches three days apart runs each stretch's
// passes and those of the 3 h after the first, not the 864 of the gap.
func TestRunGap(t *testing.T) {
	var lines []string
	for _, day := range []string{"2026-11-01", "2026-11-04"} {
		for m := 0; m < 30; m++ {
			lines = append(lines, fmt.Sprintf(`{"type":"gpu","ts":"%sT08:%02d:00Z","cluster":"c1","node":"n1","gpu_uuid":"GPU-1","gpu_index":0,"model":"NVIDIA H100 80GB HBM3","fb_total_mib":81559,"fb_used_mib":0,"gr_engine_active":0.5,"sm_active":0.4}`, day, m))
		}
	}
	a, err := New(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(t.Context(), strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	// 5 passes in the first stretch, 36 in the 3 h after it, 6 in the second
	// (from its first record, a pass time) and the last at its end.
	if rep.Trace.Passes != 5+36+6+1 {
		t.Errorf("%d passes, want 48", rep.Trace.Passes)
	}
}

// TestRunBadTrace: a bad line stops the analysis unless SkipBadLines, and a trace
// with no records is ErrNoRecords.
func TestRunBadTrace(t *testing.T) {
	good := `{"type":"gpu","ts":"2026-03-02T08:00:00Z","node":"n1","gpu_uuid":"GPU-1","model":"NVIDIA H100 80GB HBM3","fb_total_mib":81559,"fb_used_mib":0}` + "\n"
	bad := `{"type":"gpu","ts":"2026-03-02T08:00:30Z","node":"n1","gpu_uuid":"GPU-1","sm_active":7}` + "\n"
	cfg := testConfig(t)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), strings.NewReader(good+bad+good)); !errors.Is(err, trace.ErrInvalidRecord) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
	cfg.SkipBadLines = true
	if a, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(t.Context(), strings.NewReader(good+bad+good))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.LineErrors) != 1 || rep.LineErrors[0].Line != 2 || rep.Trace.SkippedLines != 1 {
		t.Errorf("skipped %+v (%d)", rep.LineErrors, rep.Trace.SkippedLines)
	}
	if _, err := a.Run(t.Context(), strings.NewReader("")); !errors.Is(err, ErrNoRecords) {
		t.Errorf("empty trace: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	cfg.GapLimit = -time.Hour
	cfg.Analyzer.Interval = 0
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "gap_limit") || !strings.Contains(err.Error(), "analyzer: interval") {
		t.Errorf("bad config: %v", err)
	}
	if _, err := New(cfg); err == nil {
		t.Error("New accepted a bad config")
	}
}

// TestRunFarTimestamp: a line dated 9999 in a trace of 2026 stops the analysis at
// once with a line error saying how far it is (it used to step the pass clock
// through 8,000 years), and with SkipBadLines the rest is analysed. (Within the
// span a trace may have, the gap rule bounds the passes, TestRunGap, and the
// chargeback refresh follows the hours with data, TestRefreshFollowsDataNotSpan.)
func TestRunFarTimestamp(t *testing.T) {
	line := func(ts string) string {
		return `{"type":"gpu","ts":"` + ts + `","node":"n1","gpu_uuid":"GPU-1","model":"NVIDIA H100 80GB HBM3","fb_total_mib":81559,"fb_used_mib":0}` + "\n"
	}
	data := line("2026-03-02T08:00:00Z") + line("9999-03-02T08:00:00Z") + line("2026-03-02T08:01:00Z")
	cfg := testConfig(t)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), strings.NewReader(data)); !errors.Is(err, trace.ErrInvalidRecord) ||
		!strings.Contains(err.Error(), "line 2: ts: 9999-03-02T08:00:00Z is 7,973 years after the trace's first record") {
		t.Fatalf("far line: %v", err)
	}
	cfg.SkipBadLines = true
	if a, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(t.Context(), strings.NewReader(data))
	if err != nil || rep.Trace.SkippedLines != 1 || !rep.Trace.End.Equal(time.Date(2026, 3, 2, 8, 1, 0, 0, time.UTC)) {
		t.Fatalf("skipping it: %+v, %v", rep, err)
	}
}
