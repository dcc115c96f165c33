package scheduler

import (
	"reflect"
	"testing"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// TestFractionJobEvents: a job of a share of one GPU publishes its fraction
// and sharing mode on submit and start, and 0 GPUs, so that nothing that
// counts a job's GPUs counts a share as a whole GPU.
func TestFractionJobEvents(t *testing.T) {
	c := placedTestConfig()
	m := &c.Model
	for i := range m.Pools {
		if m.Pools[i].Name == "train" {
			m.Pools[i].Capacity["H100-80GB/mps"] = 2000
		}
	}
	for i := range m.Queues {
		if m.Queues[i].Name == "a" {
			m.Queues[i].Quota["H100-80GB/mps"] = Quota{Nominal: 1000}
		}
	}
	h := newHarness(t, c)
	frac := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUFraction: 250, Sharing: "mps", Workload: schemas.WorkloadInference})
	h.pass()
	wantState(t, h.job(frac.ID), StateAdmitted, 1)
	j := h.job(frac.ID)
	seen := map[string]bool{}
	for _, e := range h.pub.Events() {
		if e.Job != j.AttemptKey() || e.Event != schemas.EventSubmit && e.Event != schemas.EventStart {
			continue
		}
		if e.GPUs != 0 || e.GPUFraction != 250 || e.Sharing != "mps" || e.MIGProfile != "" {
			t.Errorf("fraction job's %s event: gpus %d, gpu_fraction %d, sharing %q; want 0, 250, mps", e.Event, e.GPUs, e.GPUFraction, e.Sharing)
		}
		if err := schemas.ValidateJobEvent(&e); err != nil {
			t.Errorf("%s event: %v", e.Event, err)
		}
		seen[e.Event] = true
	}
	if len(seen) != 2 {
		t.Fatalf("saw %v, want the submit and start events", seen)
	}
}

// TestNodeGPUsCarryShares: an executor is handed a fraction's share (GPU,
// thousandths, mode, memory limit) with its node, as it is handed MIG
// instances.
func TestNodeGPUsCarryShares(t *testing.T) {
	got := nodeGPUs([]placement.NodeAlloc{{Node: "h0", Shares: []placement.Share{{GPU: 2, Fraction: 250, Mode: placement.MPS, MemMiB: 20480}}}})
	want := []executor.NodeGPUs{{Node: "h0", Shares: []executor.GPUShare{{GPU: 2, Fraction: 250, Mode: "mps", MemMiB: 20480}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("nodeGPUs %+v, want %+v", got, want)
	}
	if sh, ok := (executor.Target{Placement: got}).Share(); !ok || sh != want[0].Shares[0] {
		t.Fatalf("Target.Share %+v %t", sh, ok)
	}
}
