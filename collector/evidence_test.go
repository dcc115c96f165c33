package collector

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// eccGPU is one GPU with one process, whose ECC counters the test sets; the
// process is gone once gone is set.
type eccGPU struct {
	mu                 sync.Mutex
	corrected, uncorr  uint64
	gone               bool
	otherGPUUncorrects uint64
}

func (s *eccGPU) Sample(_ context.Context, at time.Time, b *schemas.SampleBatch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := schemas.NewGPUSample()
	g.TimeMs, g.GPUUUID, g.ECCCorrectedVolatile, g.ECCUncorrectedVolatile = at.UnixMilli(), "GPU-1", s.corrected, s.uncorr
	other := schemas.NewGPUSample()
	other.TimeMs, other.GPUUUID, other.ECCUncorrectedVolatile = at.UnixMilli(), "GPU-2", s.otherGPUUncorrects
	b.GPUs = append(b.GPUs, g, other)
	if !s.gone {
		b.Processes = append(b.Processes, schemas.ProcessSample{TimeMs: at.UnixMilli(), GPUUUID: "GPU-1", PID: 42})
	}
	return nil
}

// podAttributor attributes PID 42 to one pod and says it ended OOMKilled.
type podAttributor struct {
	info    JobInfo
	reasons int
}

func (a *podAttributor) Attribute(context.Context, uint32) (JobInfo, error) { return a.info, nil }

func (a *podAttributor) EndReason(context.Context, JobInfo) JobEnd {
	a.reasons++
	return JobEnd{Reason: "OOMKilled", Status: schemas.StatusFailed, ExitCode: 137}
}

func jobEvents(t *testing.T, pub *flakyPublisher) []schemas.JobEvent {
	t.Helper()
	pub.mu.Lock()
	defer pub.mu.Unlock()
	var out []schemas.JobEvent
	for _, m := range pub.msgs {
		if !strings.HasPrefix(m.Subject, "gpupool.jobs.") {
			continue
		}
		b, err := schemas.DecodeJobEvents(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Events...)
	}
	return out
}

// TestJobEvidence runs a pod through the collector: its cgroup (recorded under
// testdata/cgroup) counted two OOM kills, its GPU one uncorrectable and three
// corrected ECC errors while it ran (another GPU's errors are not its), and its
// vLLM endpoint counted tokens. The end event carries all of it, with the pod's
// own labels and the kubelet's end reason; the running total went out before.
func TestJobEvidence(t *testing.T) {
	exp := &exposition{}
	exp.set(http.StatusOK, vllmExposition(t, "1000.0", "0.0"))
	srv := httptest.NewServer(exp)
	defer srv.Close()

	src := &eccGPU{corrected: 7, uncorr: 0}
	attr := &podAttributor{info: JobInfo{
		Job: "k8s/inference/pod-1", Source: schemas.SourceKubernetes, Team: "nlp",
		Labels: map[string]string{"app": "vllm"}, Cgroup: podCgroup,
		Output: OutputTarget{URL: srv.URL + "/metrics", Metric: "vllm:generation_tokens_total", Unit: "tokens"},
	}}
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.MaxBackoff = "c1", "node-a", 20*time.Millisecond
	cfg.CgroupRoot, cfg.JobEndAfter = cgroupRoot, 2*time.Second
	cfg.Output = OutputConfig{Interval: time.Second, Timeout: time.Second, ReportEvery: time.Second}
	pub := &flakyPublisher{}
	c, err := New(cfg, src, pub, WithAttributor(attr))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tick := func(i int) {
		t.Helper()
		if err := c.Collect(ctx, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	tick(0) // start; ECC counters seen for the first time (7 corrected before the job)
	src.mu.Lock()
	src.corrected, src.uncorr, src.otherGPUUncorrects = 10, 1, 5
	src.mu.Unlock()
	c.jobs.output.scrapeAll(ctx)
	tick(1) // running total 1000 tokens; GPU-1 +3 corrected +1 uncorrectable
	exp.set(http.StatusOK, vllmExposition(t, "1500.0", "0.0"))
	c.jobs.output.scrapeAll(ctx)
	src.mu.Lock()
	src.gone = true
	src.mu.Unlock()
	for i := 2; i <= 4; i++ {
		tick(i)
	}

	evs := jobEvents(t, pub)
	var starts, ends []schemas.JobEvent
	for _, e := range evs {
		switch e.Event {
		case schemas.EventStart:
			starts = append(starts, e)
		case schemas.EventEnd:
			ends = append(ends, e)
		}
	}
	if len(starts) != 3 || len(ends) != 1 {
		t.Fatalf("%d start and %d end events, want 3 and 1: %+v", len(starts), len(ends), evs)
	}
	if starts[0].TimeMs != t0.UnixMilli() || starts[0].Labels[schemas.LabelOutputUnits] != "" {
		t.Errorf("first start %+v: want at t0 without output", starts[0])
	}
	if r := starts[1]; r.TimeMs != t0.Add(time.Second).UnixMilli() || r.Labels[schemas.LabelOutputUnits] != "1000" ||
		r.Labels["app"] != "vllm" || r.Team != "nlp" || len(r.GPUUUIDs) != 1 {
		t.Errorf("running-total report %+v", r)
	}
	end := ends[0]
	want := map[string]string{
		"app":                       "vllm",
		schemas.LabelOOMKills:       "2",
		schemas.LabelECCUncorrected: "1",
		schemas.LabelECCCorrected:   "3",
		schemas.LabelEndReason:      "OOMKilled",
		schemas.LabelOutputUnits:    "1500",
		schemas.LabelOutputUnit:     "tokens",
	}
	if len(end.Labels) != len(want) {
		t.Errorf("end labels %v, want %v", end.Labels, want)
	}
	for k, v := range want {
		if end.Labels[k] != v {
			t.Errorf("end label %s = %q, want %q", k, end.Labels[k], v)
		}
	}
	if end.Status != schemas.StatusFailed || end.ExitCode != 137 {
		t.Errorf("end status %q exit %d, want the kubelet's failed, 137", end.Status, end.ExitCode)
	}
	if end.TimeMs != t0.Add(time.Second).UnixMilli() || attr.reasons != 1 {
		t.Errorf("end at %d (want the last sighting, t0+1s), end reason asked %d times", end.TimeMs, attr.reasons)
	}
	if _, ok := c.jobs.output.total("k8s/inference/pod-1"); ok {
		t.Error("the ended job is still scraped")
	}
}

// TestJobEvidenceNone: a job without a cgroup, ECC errors or an output counter
// ends with its own labels only: no zero counts, no output (never 0).
func TestJobEvidenceNone(t *testing.T) {
	src := &eccGPU{}
	attr := &podAttributor{info: JobInfo{Job: "proc/node-a/x", Source: schemas.SourceProcess}}
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.CgroupRoot, cfg.JobEndAfter = "c1", "node-a", cgroupRoot, time.Second
	pub := &flakyPublisher{}
	c, err := New(cfg, src, pub, WithAttributor(attr))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if i == 1 {
			src.gone = true
		}
		if err := c.Collect(t.Context(), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range jobEvents(t, pub) {
		if len(e.Labels) != 0 {
			t.Errorf("%s event has labels %v", e.Event, e.Labels)
		}
	}
	if attr.reasons != 0 {
		t.Error("the kubelet was asked about a job that is no pod")
	}
}

func TestECCStep(t *testing.T) {
	for _, c := range []struct{ prev, now, inc, keep uint64 }{
		{0, 0, 0, 0},
		{3, 5, 2, 5},
		{5, 0, 0, 5}, // not read this tick: no reset, and no false increase after
		{5, 2, 0, 2}, // the driver reloaded: counting again from 2
	} {
		if inc, keep := eccStep(c.prev, c.now); inc != c.inc || keep != c.keep {
			t.Errorf("eccStep(%d, %d) = %d, %d; want %d, %d", c.prev, c.now, inc, keep, c.inc, c.keep)
		}
	}
}
