package scheduler

import (
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// migTestConfig is placedTestConfig with GPU 0 of each H100 node split into
// seven 1g.10gb instances, and queue a's quota of them.
func migTestConfig() Config {
	c := placedTestConfig()
	m := &c.Model
	m.Clusters[0].Nodes[0].MIG = [][]string{{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}}
	m.Pools[0].Capacity = map[string]int{"H100-80GB": 6, "H100-80GB/1g.10gb": 14}
	for i := range m.Queues {
		if m.Queues[i].Pool == "train" {
			m.Queues[i].Quota = map[string]Quota{"H100-80GB": {Nominal: 3}, "H100-80GB/1g.10gb": {Nominal: 7}}
		}
	}
	return c
}

// TestMIGJobEvents: a job of MIG instances publishes its profile and instance
// count on submit and start, and 0 GPUs, so that nothing that counts a job's
// GPUs (the jobs view, chargeback's queue-wait GPU-hours) counts an instance
// as a whole GPU; a job of whole GPUs still publishes its GPUs and no profile.
func TestMIGJobEvents(t *testing.T) {
	h := newHarness(t, migTestConfig())
	mig := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 3, MIGProfile: "1g.10gb", Workload: schemas.WorkloadDev})
	whole := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB", Workload: schemas.WorkloadTraining})
	h.pass()
	wantState(t, h.job(mig.ID), StateAdmitted, 1)
	wantState(t, h.job(whole.ID), StateAdmitted, 1)
	migJob, wholeJob := h.job(mig.ID), h.job(whole.ID)
	seen := map[string]bool{}
	for _, e := range h.pub.Events() {
		if e.Event != schemas.EventSubmit && e.Event != schemas.EventStart {
			continue
		}
		switch e.Job {
		case migJob.AttemptKey():
			if e.GPUs != 0 || e.MIGProfile != "1g.10gb" || e.MIGInstances != 3 {
				t.Errorf("MIG job's %s event: gpus %d, mig_profile %q, mig_instances %d; want 0, 1g.10gb, 3", e.Event, e.GPUs, e.MIGProfile, e.MIGInstances)
			}
			if e.Event == schemas.EventStart && e.Card != "H100-80GB" {
				t.Errorf("MIG job's start event: card %q, want the instances' card H100-80GB", e.Card)
			}
		case wholeJob.AttemptKey():
			if e.GPUs != 2 || e.MIGProfile != "" || e.MIGInstances != 0 {
				t.Errorf("whole job's %s event: gpus %d, mig_profile %q, mig_instances %d; want 2, none, 0", e.Event, e.GPUs, e.MIGProfile, e.MIGInstances)
			}
		default:
			continue
		}
		if err := schemas.ValidateJobEvent(&e); err != nil {
			t.Errorf("%s event of %s: %v", e.Event, e.Job, err)
		}
		seen[e.Job+" "+e.Event] = true
	}
	if len(seen) != 4 {
		t.Fatalf("saw the submit and start events %v, want both of each job", seen)
	}
}
