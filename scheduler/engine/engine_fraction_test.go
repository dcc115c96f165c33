package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
	"go.yaml.in/yaml/v3"
)

// fracModel is one cluster with node h of 4 H100-80GB. Queue a has 1000
// thousandths of H100-80GB/mps and of /timeslice and no whole GPUs, in no
// cohort; b 4 whole GPUs and 3000 of each fraction resource.
func fracModel() Model {
	classes := []string{"normal"}
	return Model{
		Cards:    []Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}},
		Clusters: []Cluster{{Name: "c1", Nodes: []NodeGroup{{Name: "h", Card: "H100-80GB", GPUs: 4}}}},
		Pools: []Pool{{Name: "p", MayLend: true, MayBorrow: true, Preemptible: true, MaxJobDuration: 24 * time.Hour,
			Capacity: map[string]int{"H100-80GB": 4, "H100-80GB/mps": 4000, "H100-80GB/timeslice": 4000}}},
		PriorityClasses:      []PriorityClass{{Name: "normal", Value: 100}},
		DefaultPriorityClass: "normal",
		Queues: []Queue{
			{Name: "a", Pool: "p", Weight: 1, PriorityClasses: classes,
				Quota: map[string]Quota{"H100-80GB/mps": {Nominal: 1000}, "H100-80GB/timeslice": {Nominal: 1000}}},
			{Name: "b", Pool: "p", Weight: 1, PriorityClasses: classes,
				Quota: map[string]Quota{"H100-80GB": {Nominal: 4}, "H100-80GB/mps": {Nominal: 3000}, "H100-80GB/timeslice": {Nominal: 3000}}},
		},
	}
}

func fracJob(queue string, f int, mode placement.Sharing) JobSpec {
	return JobSpec{Team: "t", Queue: queue, GPUFraction: f, Sharing: string(mode), TimeLimitS: 3600}
}

// sharedGPUs checks the running jobs' shares: one mode per GPU, fractions ≤
// 1000, no GPU both shared and whole; it returns the shared GPUs by key.
func sharedGPUs(t *testing.T, e *Engine) map[string]int {
	t.Helper()
	sum, mode, whole := map[string]int{}, map[string]placement.Sharing{}, map[string]bool{}
	for _, j := range e.jobs {
		for _, a := range j.Placement {
			for _, g := range a.GPUs {
				whole[a.Node+"/"+string(rune('0'+g))] = true
			}
			for _, s := range a.Shares {
				key := a.Node + "/" + string(rune('0'+s.GPU))
				if m, ok := mode[key]; ok && m != s.Mode || string(s.Mode) != j.Spec.Sharing {
					t.Fatalf("%s: GPU %s shared by %s and %s (job asks %s)", j.ID, key, m, s.Mode, j.Spec.Sharing)
				}
				mode[key] = s.Mode
				sum[key] += s.Fraction
			}
		}
	}
	for key, n := range sum {
		if n > 1000 || whole[key] {
			t.Fatalf("GPU %s: fractions %d, held whole %t", key, n, whole[key])
		}
	}
	return sum
}

// TestFractionQuota: a's mps fractions count against its H100-80GB/mps quota
// in thousandths and share one GPU; a timeslice fraction takes another GPU;
// whole jobs get only the GPUs no fraction shares.
func TestFractionQuota(t *testing.T) {
	e := mustEngine(t, fracModel())
	var mps []*Job
	for range 4 {
		mps = append(mps, mustSubmit(t, e, fracJob("a", 300, placement.MPS), t0))
	}
	ts := mustSubmit(t, e, fracJob("a", 500, placement.TimeSlice), t0)
	three := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 3, TimeLimitS: 3600}, t0)
	two := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 2, TimeLimitS: 3600}, t0)
	e.Schedule(t0)
	for i, j := range mps[:3] {
		if j.State != StateAdmitted {
			t.Fatalf("mps %d: %s (%s)", i, j.State, j.WaitReason)
		}
	}
	if want := "queue a would use 1200 H100-80GB/mps, past its nominal 1000"; mps[3].State != StateQueued || !strings.Contains(mps[3].WaitReason, want) {
		t.Fatalf("4th mps: %s (%s), want %q", mps[3].State, mps[3].WaitReason, want)
	}
	if ts.State != StateAdmitted || three.State != StateQueued || two.State != StateAdmitted {
		t.Fatalf("timeslice %s, 3 whole %s (%s), 2 whole %s (%s)", ts.State, three.State, three.WaitReason, two.State, two.WaitReason)
	}
	if got := sharedGPUs(t, e); len(got) != 2 {
		t.Fatalf("shared GPUs %v, want 2 (900 mps, 500 timeslice)", got)
	}
	checkInvariants(t, e, map[string]bool{}, map[string]bool{})
	// The last mps share to leave frees its GPU whole for the 3-GPU job.
	e.Finish(two.ID, "succeeded", t0)
	for _, j := range mps[:3] {
		e.Finish(j.ID, "succeeded", t0)
	}
	e.Schedule(t0)
	if three.State != StateAdmitted || mps[3].State != StateQueued {
		t.Fatalf("after the shares left: 3 whole %s (%s), mps %s (no GPU left to share)", three.State, three.WaitReason, mps[3].State)
	}
	e.Finish(ts.ID, "succeeded", t0)
	e.Schedule(t0)
	if mps[3].State != StateAdmitted {
		t.Fatalf("after the timeslice share left: mps %s (%s)", mps[3].State, mps[3].WaitReason)
	}
	checkInvariants(t, e, map[string]bool{}, map[string]bool{})
}

// TestFractionCounting: without nodes, a cluster's fractions hold ⌈Σ/1000⌉
// whole GPUs per mode against the card's capacity, so whole jobs are not
// admitted onto them; a fraction that needs a new GPU waits for one.
func TestFractionCounting(t *testing.T) {
	m := fracModel()
	m.Clusters[0].Nodes = nil
	m.Clusters[0].Capacity = map[string]int{"H100-80GB": 4}
	e := mustEngine(t, m)
	a1 := mustSubmit(t, e, fracJob("b", 600, placement.MPS), t0)
	a2 := mustSubmit(t, e, fracJob("b", 600, placement.MPS), t0)
	three := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 3, TimeLimitS: 3600}, t0)
	two := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 2, TimeLimitS: 3600}, t0)
	e.Schedule(t0)
	if a1.State != StateAdmitted || a2.State != StateAdmitted || three.State != StateQueued || two.State != StateAdmitted {
		t.Fatalf("mps %s %s, 3 whole %s, 2 whole %s (%s)", a1.State, a2.State, three.State, two.State, two.WaitReason)
	}
	if c := e.clusters[0]; c.used[e.cardIdx["H100-80GB"]] != 4 || c.used[e.cardIdx["H100-80GB/mps"]] != 1200 {
		t.Fatalf("cluster use %v", c.used)
	}
	ts := mustSubmit(t, e, fracJob("b", 100, placement.TimeSlice), t0)
	mps := mustSubmit(t, e, fracJob("b", 400, placement.MPS), t0) // 1600: fits the 2 mps GPUs
	e.Schedule(t0)
	if ts.State != StateQueued || mps.State != StateAdmitted || !strings.Contains(ts.WaitReason, "capacity") {
		t.Fatalf("timeslice %s (%s), want a wait for capacity; mps 400 %s (%s)", ts.State, ts.WaitReason, mps.State, mps.WaitReason)
	}
	checkInvariants(t, e, map[string]bool{}, map[string]bool{})
	e.Finish(a1.ID, "succeeded", t0)
	e.Schedule(t0)
	if ts.State != StateAdmitted {
		t.Fatalf("after an mps job left (1000 on one GPU): timeslice %s (%s)", ts.State, ts.WaitReason)
	}
	checkInvariants(t, e, map[string]bool{}, map[string]bool{})
}

// TestFractionRestart: a restart puts fractions back on their shares, and a
// new fraction joins the shared GPU that has room.
func TestFractionRestart(t *testing.T) {
	m := fracModel()
	e := mustEngine(t, m)
	jobs := []*Job{
		mustSubmit(t, e, fracJob("b", 250, placement.MPS), t0),
		mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, GPUFraction: 500, Sharing: "timeslice", GPUMemoryMiB: 2048}, t0),
		mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 2}, t0),
	}
	e.Schedule(t0)
	saved := savedOverJSON(t, e)
	e2 := mustEngine(t, m)
	if dropped, unplaced := e2.Restore(e.Seq(), saved); len(dropped) > 0 || len(unplaced) > 0 {
		t.Fatalf("dropped %v, unplaced %v", dropped, unplaced)
	}
	for _, j := range jobs {
		p, ok := e2.place.st.Placed(j.ID)
		if !ok || !reflect.DeepEqual(p.Nodes(), j.Placement) {
			t.Fatalf("%s restored on %+v (placed %t), was on %+v", j.ID, p.Nodes(), ok, j.Placement)
		}
	}
	if got := jobs[1].Placement[0].Shares; len(got) != 1 || got[0].MemMiB != 2048 || got[0].Fraction != 500 {
		t.Fatalf("timeslice share %+v", got)
	}
	more := mustSubmit(t, e2, fracJob("b", 750, placement.MPS), t0)
	whole := mustSubmit(t, e2, JobSpec{Team: "t", Queue: "b", GPUs: 1}, t0)
	e2.Schedule(t0)
	if more.State != StateAdmitted || whole.State != StateQueued {
		t.Fatalf("after the restart: mps 750 %s (%s), a whole GPU %s (all 4 held or shared)", more.State, more.WaitReason, whole.State)
	}
	if got := sharedGPUs(t, e2); len(got) != 2 {
		t.Fatalf("shared %v: the 750 should join the 250's GPU", got)
	}
	checkInvariants(t, e2, map[string]bool{}, map[string]bool{})
}

// TestFractionSubmitErrors: bad fraction fields are refused naming the field.
func TestFractionSubmitErrors(t *testing.T) {
	e := mustEngine(t, fracModel())
	for _, c := range []struct {
		spec JobSpec
		want string
	}{
		{JobSpec{GPUs: 2, GPUFraction: 500, Sharing: "mps"}, "gpus: 2 with gpu_fraction 500"},
		{JobSpec{GPUFraction: 1000, Sharing: "mps"}, "gpu_fraction: 1000 is outside 1–999"},
		{JobSpec{GPUFraction: 500, Sharing: "hami"}, `sharing: "hami" is neither "timeslice" nor "mps"`},
		{JobSpec{GPUFraction: 500}, `sharing: "" is neither`},
		{JobSpec{GPUFraction: 500, Sharing: "mps", MIGProfile: "1g.10gb"}, "gpu_fraction: set with mig_profile"},
		{JobSpec{GPUs: 1, Sharing: "mps"}, `sharing: "mps" without gpu_fraction`},
		{JobSpec{GPUs: 1, GPUMemoryMiB: 10}, "gpu_memory_mib: 10 without gpu_fraction"},
		{JobSpec{GPUFraction: 500, Sharing: "mps", GPUMemoryMiB: -1}, "gpu_memory_mib: -1 is negative"},
		{JobSpec{GPUFraction: 500, Sharing: "mps", Card: "H100-80GB", GPUMemoryMiB: 90000}, "gpu_memory_mib: 90000 is more than card H100-80GB's 81920 MiB"},
		{JobSpec{GPUFraction: 500, Sharing: "mps", GPUMemoryMiB: 90000}, "sharing: no cluster has mps fractions of any card with 90000 MiB"},
	} {
		c.spec.Team, c.spec.Queue = "t", "b"
		if _, err := e.Submit(c.spec, t0); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	m := fracModel()
	m.Pools[0].Capacity = map[string]int{"H100-80GB": 4}
	m.Queues = m.Queues[1:]
	m.Queues[0].Quota = map[string]Quota{"H100-80GB": {Nominal: 4}}
	e = mustEngine(t, m)
	if _, err := e.Submit(fracJob("b", 500, placement.MPS), t0); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "fraction resources: none") {
		t.Errorf("a model with no fraction resource: %v", err)
	}
}

// TestFractionModelValidation: a cluster's fraction capacity may not pass its
// whole GPUs' worth; quotas of fractions are checked against the pools'.
func TestFractionModelValidation(t *testing.T) {
	m := fracModel()
	m.Clusters[0].Nodes = nil
	m.Clusters[0].Capacity = map[string]int{"H100-80GB": 4, "H100-80GB/mps": 5000}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "clusters[0].capacity.H100-80GB/mps: 5000 thousandths, more than its 4 whole H100-80GB GPUs hold (4000)") {
		t.Errorf("fraction capacity past the card: %v", err)
	}
	m = fracModel()
	m.Queues[1].Quota["H100-80GB/mps"] = Quota{Nominal: 3500}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "H100-80GB/mps") {
		t.Errorf("fraction quotas past the pool: %v", err)
	}
	m = fracModel()
	m.Queues[1].Quota["L4/mps"] = Quota{Nominal: 1}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "a fraction resource <card>/timeslice or <card>/mps") {
		t.Errorf("fraction of an unknown card: %v", err)
	}
}

// TestFractionQuotaYAML: docs/scheduler.md's fraction quota parses.
func TestFractionQuotaYAML(t *testing.T) {
	var q Queue
	src := "{name: nlp-inference, pool: serve, team: nlp,\n quota: {H100-80GB/mps: {nominal: 2000}, H100-80GB/timeslice: {nominal: 500}, H100-80GB: {nominal: 4}}}"
	if err := yaml.Unmarshal([]byte(src), &q); err != nil {
		t.Fatal(err)
	}
	if q.Quota["H100-80GB/mps"].Nominal != 2000 || q.Quota["H100-80GB/timeslice"].Nominal != 500 || len(q.Quota) != 3 {
		t.Fatalf("%+v", q.Quota)
	}
}
