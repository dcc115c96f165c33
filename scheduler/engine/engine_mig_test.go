package engine

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// migModel is one cluster: node m, 8 A100-80GB of which GPU 0 is 7 × 1g.10gb
// and GPU 1 3g.40gb + 2 × 2g.20gb (6 whole), and node h, 8 whole H100. Queue a
// has a nominal 2 of A100-80GB/1g.10gb; b the rest; both in cohort t.
func migModel() Model {
	classes := []string{"critical", "normal", "low"}
	return Model{
		Cards: []Card{{Name: "A100-80GB", MemoryGiB: 80, Rank: 2}, {Name: "H100-80GB", MemoryGiB: 80, Rank: 4}},
		Clusters: []Cluster{{Name: "c1", Nodes: []NodeGroup{
			{Name: "m", Card: "A100-80GB", GPUs: 8, MIG: [][]string{
				{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"},
				{"3g.40gb", "2g.20gb", "2g.20gb"},
			}},
			{Name: "h", Card: "H100-80GB", GPUs: 8},
		}}},
		Pools: []Pool{{Name: "train", MayLend: true, MayBorrow: true, Preemptible: true, MaxJobDuration: 24 * time.Hour,
			Capacity: map[string]int{"A100-80GB": 6, "H100-80GB": 8, "A100-80GB/1g.10gb": 7, "A100-80GB/2g.20gb": 2, "A100-80GB/3g.40gb": 1}}},
		PriorityClasses:      []PriorityClass{{Name: "critical", Value: 1000}, {Name: "normal", Value: 100}, {Name: "low", Value: 10}},
		DefaultPriorityClass: "normal",
		Queues: []Queue{
			{Name: "a", Pool: "train", Cohort: "t", Weight: 1, PriorityClasses: classes,
				Quota: map[string]Quota{"A100-80GB/1g.10gb": {Nominal: 2}}},
			{Name: "b", Pool: "train", Cohort: "t", Weight: 1, PriorityClasses: classes, Quota: map[string]Quota{
				"A100-80GB/1g.10gb": {Nominal: 5}, "A100-80GB": {Nominal: 6}, "H100-80GB": {Nominal: 8},
				"A100-80GB/2g.20gb": {Nominal: 2}, "A100-80GB/3g.40gb": {Nominal: 1}}},
		},
	}
}

// checkMIGPlacements checks the running jobs' placements against the model's
// layouts: no GPU or instance given twice; a job of MIG instances holds exactly
// its count of its profile's instances and no whole GPU; a job of whole GPUs
// holds its count of whole GPUs, none of them partitioned.
func checkMIGPlacements(t *testing.T, e *Engine) {
	t.Helper()
	partitioned := map[string]bool{}
	for _, c := range e.model.Fleet().Clusters {
		for _, n := range c.Nodes {
			for g, inst := range n.MIG {
				partitioned[fmt.Sprintf("%s/%d", n.Name, g)] = len(inst) > 0
			}
		}
	}
	seen := map[string]string{}
	take := func(key, id string) {
		if o, dup := seen[key]; dup {
			t.Fatalf("%s given to %s and %s", key, o, id)
		}
		seen[key] = id
	}
	for _, j := range e.jobs {
		gpus, inst := 0, 0
		for _, a := range j.Placement {
			for _, g := range a.GPUs {
				key := fmt.Sprintf("%s/%d", a.Node, g)
				if partitioned[key] {
					t.Fatalf("%s got partitioned GPU %s whole", j.ID, key)
				}
				take(key, j.ID)
				gpus++
			}
			for _, s := range a.Slices {
				if s.Profile != j.Spec.MIGProfile {
					t.Fatalf("%s (MIG profile %q) got instance %+v", j.ID, j.Spec.MIGProfile, s)
				}
				take(fmt.Sprintf("%s/%d.%d", a.Node, s.GPU, s.Index), j.ID)
				inst++
			}
		}
		want := [2]int{j.Spec.GPUs, 0}
		if j.Spec.MIGProfile != "" {
			want = [2]int{0, j.Spec.GPUs}
		}
		if !j.Running() {
			want = [2]int{}
		}
		if got := [2]int{gpus, inst}; got != want {
			t.Fatalf("%s (%s, %d %s) holds %d GPUs and %d instances: %+v", j.ID, j.State, j.Spec.GPUs, j.Spec.unit(), gpus, inst, j.Placement)
		}
	}
}

func migJob(queue string, n int, profile string) JobSpec {
	return JobSpec{Team: "t", Queue: queue, GPUs: n, MIGProfile: profile, TimeLimitS: 3600}
}

// TestMIGQuota: queue a, nominal 2 of A100-80GB/1g.10gb, runs 2 instances;
// the third borrows from its cohort, or waits with no cohort.
func TestMIGQuota(t *testing.T) {
	e := mustEngine(t, migModel())
	var jobs []*Job
	for range 3 {
		jobs = append(jobs, mustSubmit(t, e, migJob("a", 1, "1g.10gb"), t0))
	}
	e.Schedule(t0)
	for i, j := range jobs {
		if j.State != StateAdmitted || j.Card != "A100-80GB" || j.Borrowed != min(1, max(0, i-1)) {
			t.Fatalf("job %d: %s on %s, borrowed %d (%s)", i, j.State, j.Card, j.Borrowed, j.WaitReason)
		}
	}
	checkMIGPlacements(t, e)
	var usage *CardUsage
	for _, c := range e.Queues()[0].Cards {
		if c.Card == "A100-80GB/1g.10gb" {
			usage = &c
		}
	}
	if usage == nil || usage.Nominal != 2 || usage.Used != 3 || usage.Borrowed != 1 {
		t.Fatalf("queue a's MIG usage: %+v", e.Queues()[0].Cards)
	}

	m := migModel()
	m.Queues[0].Cohort = ""
	e = mustEngine(t, m)
	jobs = jobs[:0]
	for range 3 {
		jobs = append(jobs, mustSubmit(t, e, migJob("a", 1, "1g.10gb"), t0))
	}
	e.Schedule(t0)
	if jobs[0].State != StateAdmitted || jobs[1].State != StateAdmitted || jobs[2].State != StateQueued {
		t.Fatalf("no cohort: %s %s %s", jobs[0].State, jobs[1].State, jobs[2].State)
	}
	if want := "queue a would use 3 A100-80GB/1g.10gb, past its nominal 2"; !strings.Contains(jobs[2].WaitReason, want) {
		t.Fatalf("wait reason %q, want %q", jobs[2].WaitReason, want)
	}
}

// TestMIGPlacement: MIG jobs go on instances of their profile, whole-GPU jobs
// on whole GPUs only: with the 6 whole A100 taken, one more waits although
// instances are free.
func TestMIGPlacement(t *testing.T) {
	e := mustEngine(t, migModel())
	whole := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 6, Card: "A100-80GB"}, t0)
	two := mustSubmit(t, e, migJob("b", 2, "2g.20gb"), t0)
	big := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, Card: "A100-80GB", MIGProfile: "3g.40gb"}, t0)
	small := mustSubmit(t, e, migJob("b", 5, "1g.10gb"), t0)
	e.Schedule(t0)
	for _, j := range []*Job{whole, two, big, small} {
		if j.State != StateAdmitted {
			t.Fatalf("%s (%d %s): %s", j.ID, j.Spec.GPUs, j.Spec.unit(), j.WaitReason)
		}
	}
	checkMIGPlacements(t, e)
	if s := two.Placement[0].Slices; len(s) != 2 || s[0].GPU != 1 || s[1].GPU != 1 {
		t.Fatalf("2 × 2g.20gb on %+v", two.Placement)
	}
	more := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, Card: "A100-80GB"}, t0)
	e.Schedule(t0)
	if more.State != StateQueued || !strings.HasPrefix(more.WaitReason, "placement:") {
		t.Fatalf("a 7th whole A100 with only instances free: %s (%s)", more.State, more.WaitReason)
	}
	checkMIGPlacements(t, e)
	// 7 whole A100 never fit: 2 of its 8 are partitioned.
	if _, err := e.Submit(JobSpec{Team: "t", Queue: "b", GPUs: 7, Card: "A100-80GB"}, t0); !errors.Is(err, ErrOverQuota) {
		t.Fatalf("7 whole A100: %v", err)
	}
	// Finishing a MIG job frees its instances for the next.
	if _, err := e.Finish(small.ID, "succeeded", t0); err != nil {
		t.Fatal(err)
	}
	again := mustSubmit(t, e, migJob("b", 5, "1g.10gb"), t0)
	e.Schedule(t0)
	if again.State != StateAdmitted {
		t.Fatalf("5 × 1g.10gb after 5 were freed: %s", again.WaitReason)
	}
	checkMIGPlacements(t, e)
}

// TestMIGSubmitErrors: a MIG request the model cannot run is refused at submit,
// naming what is wrong.
func TestMIGSubmitErrors(t *testing.T) {
	e := mustEngine(t, migModel())
	for _, c := range []struct {
		spec JobSpec
		err  error
		want string
	}{
		{migJob("b", 1, "9g.90gb"), ErrInvalidJob, `mig_profile: no cluster has instances of "9g.90gb" (the model's MIG resources: A100-80GB/1g.10gb, A100-80GB/2g.20gb, A100-80GB/3g.40gb)`},
		{JobSpec{Team: "t", Queue: "b", GPUs: 1, Card: "A100-80GB", MIGProfile: "1g.5gb"}, ErrInvalidJob, `mig_profile: "1g.5gb" is not a MIG profile of A100-80GB (80 GiB: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)`},
		{JobSpec{Team: "t", Queue: "b", GPUs: 1, Card: "H100-80GB", MIGProfile: "1g.10gb"}, ErrInvalidJob, "mig_profile: no cluster has H100-80GB instances of 1g.10gb"},
		{JobSpec{Team: "t", Queue: "b", GPUs: 1, Card: "V100", MIGProfile: "1g.10gb"}, ErrInvalidJob, `card "V100" does not exist`},
		{JobSpec{Team: "t", Queue: "b", GPUs: 1, MinMemoryGiB: 10, MIGProfile: "1g.10gb"}, ErrInvalidJob, "min_memory_gib: 10 with mig_profile 1g.10gb"},
		{JobSpec{Team: "t", Queue: "b", GPUs: 1, MIGProfile: "1g/10gb"}, ErrInvalidJob, "mig_profile"},
		{migJob("b", 8, "1g.10gb"), ErrOverQuota, "8 MIG instances of 1g.10gb can never run (A100-80GB/1g.10gb: queue b can hold at most 7 (nominal 5 + borrowable 2)); ask for fewer MIG instances of 1g.10gb"},
		{JobSpec{Team: "t", Queue: "b", GPUs: 2, Card: "A100-80GB", MIGProfile: "3g.40gb"}, ErrOverQuota, "A100-80GB/3g.40gb: queue b can hold at most 1"},
		{migJob("a", 3, "2g.20gb"), ErrOverQuota, "A100-80GB/2g.20gb: queue a can hold at most 2 (nominal 0 + borrowable 2)"},
	} {
		_, err := e.Submit(c.spec, t0)
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %v with %q", c.spec, err, c.err, c.want)
		}
	}
}

// TestMIGModelValidation: MIG keys in quotas and capacities are checked, and
// the error names the field.
func TestMIGModelValidation(t *testing.T) {
	if err := migModel().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*Model)
		want   string
	}{
		{func(m *Model) { m.Queues[0].Quota["A100-80GB/9g.90gb"] = Quota{} },
			`queues[0].quota.A100-80GB/9g.90gb: "9g.90gb" is not a MIG profile of A100-80GB (80 GiB: 1g.10gb, 1g.20gb,`},
		{func(m *Model) { m.Queues[0].Quota["V100/1g.10gb"] = Quota{} },
			`queues[0].quota.V100/1g.10gb: no such card type "V100" (cards lists [A100-80GB H100-80GB]; a MIG resource is <card>/<profile>`},
		{func(m *Model) {
			m.Cards = append(m.Cards, Card{Name: "L40S-48GB", MemoryGiB: 48})
			m.Pools[0].Capacity["L40S-48GB/1g.10gb"] = 1
		}, "pools[0].capacity.L40S-48GB/1g.10gb: card L40S-48GB (48 GiB) has no MIG profiles"},
		{func(m *Model) { m.Clusters[0].Capacity = map[string]int{"A100-80GB/1g.10gb": 8} },
			"clusters[0].capacity.A100-80GB/1g.10gb: 8, but the cluster's nodes have 7 A100-80GB MIG instances of 1g.10gb"},
		{func(m *Model) { m.Pools[0].Capacity["A100-80GB/1g.10gb"] = 9 },
			"pools: the pools' capacities of A100-80GB/1g.10gb add up to 9, more than the clusters' 7"},
		{func(m *Model) { m.Queues[1].Quota["A100-80GB/1g.10gb"] = Quota{Nominal: 6} },
			`pools[0].capacity.A100-80GB/1g.10gb: the nominal quotas of pool "train"'s queues add up to 8, more than its capacity 7`},
		{func(m *Model) { m.Queues[0].Quota["A100-80GB/1g.10gb"] = Quota{Nominal: 2, LendingLimit: ptr(3)} },
			"queues[0].quota.A100-80GB/1g.10gb.lending_limit: 3 must be 0..2"},
	} {
		m := migModel()
		c.change(&m)
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v\nwant %q", err, c.want)
		}
	}
	// A capacity written beside the nodes that agrees is accepted.
	m := migModel()
	m.Clusters[0].Capacity = map[string]int{"A100-80GB": 6, "A100-80GB/1g.10gb": 7}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestMIGCounting: without nodes, MIG resources are counted like card types,
// and a whole-GPU job is never counted on one.
func TestMIGCounting(t *testing.T) {
	m := migModel()
	m.Clusters[0].Nodes = nil
	m.Clusters[0].Capacity = map[string]int{"A100-80GB": 6, "H100-80GB": 8, "A100-80GB/1g.10gb": 7, "A100-80GB/2g.20gb": 2, "A100-80GB/3g.40gb": 1}
	m.Queues[0].Cohort = ""
	e := mustEngine(t, m)
	if e.Placed() {
		t.Fatal("a model without nodes places")
	}
	var mig []*Job
	for range 3 {
		mig = append(mig, mustSubmit(t, e, migJob("a", 1, "1g.10gb"), t0))
	}
	whole := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 6}, t0)
	e.Schedule(t0)
	if mig[0].State != StateAdmitted || mig[1].State != StateAdmitted || mig[2].State != StateQueued {
		t.Fatalf("MIG jobs: %s %s %s (%s)", mig[0].State, mig[1].State, mig[2].State, mig[2].WaitReason)
	}
	if mig[0].Card != "A100-80GB" || len(mig[0].Placement) != 0 {
		t.Fatalf("counted MIG job on %q, placement %v", mig[0].Card, mig[0].Placement)
	}
	if whole.State != StateAdmitted || whole.Card != "A100-80GB" {
		t.Fatalf("whole-GPU job: %s on %q (%s)", whole.State, whole.Card, whole.WaitReason)
	}
	// The 6 whole A100 are held; 5 of 7 instances are free: b's 5 fit.
	b := mustSubmit(t, e, migJob("b", 5, "1g.10gb"), t0)
	more := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, Card: "A100-80GB"}, t0)
	e.Schedule(t0)
	if b.State != StateAdmitted || more.State != StateQueued {
		t.Fatalf("5 instances: %s (%s); a 7th whole A100: %s", b.State, b.WaitReason, more.State)
	}
	if _, err := e.Finish(mig[0].ID, "succeeded", t0); err != nil {
		t.Fatal(err)
	}
	e.Schedule(t0)
	if mig[2].State != StateAdmitted {
		t.Fatalf("after a finish: %s (%s)", mig[2].State, mig[2].WaitReason)
	}
	checkInvariants(t, e, map[string]bool{}, map[string]bool{})
}

// TestMIGRestart: a restart puts MIG jobs back on their instances.
func TestMIGRestart(t *testing.T) {
	m := migModel()
	e := mustEngine(t, m)
	jobs := []*Job{
		mustSubmit(t, e, migJob("b", 3, "1g.10gb"), t0),
		mustSubmit(t, e, migJob("b", 1, "2g.20gb"), t0),
		mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 2, Card: "A100-80GB"}, t0),
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
		if r, _ := e2.Live(j.ID); r.Spec.MIGProfile != j.Spec.MIGProfile || !r.Running() {
			t.Fatalf("%s restored as %s, profile %q", j.ID, r.State, r.Spec.MIGProfile)
		}
	}
	// The 4 free 1g.10gb and the free 2g.20gb go to new jobs, none twice.
	four := mustSubmit(t, e2, migJob("b", 4, "1g.10gb"), t0)
	two := mustSubmit(t, e2, migJob("b", 1, "2g.20gb"), t0)
	e2.Schedule(t0)
	if four.State != StateAdmitted || two.State != StateAdmitted {
		t.Fatalf("after the restart: 4 × 1g.10gb %s (%s), 2g.20gb %s", four.State, four.WaitReason, two.State)
	}
	checkMIGPlacements(t, e2)
}

// TestMIGReclaimAndPreempt: a lender's MIG job takes its nominal instances back
// from a borrower's MIG job; a critical MIG job preempts a low one of its
// queue; whole-GPU jobs are never their victims.
func TestMIGReclaimAndPreempt(t *testing.T) {
	e := mustEngine(t, migModel())
	whole := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 6, Card: "A100-80GB", PriorityClass: "low"}, t0)
	var low []*Job
	for range 7 {
		low = append(low, mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, MIGProfile: "1g.10gb", PriorityClass: "low"}, t0))
	}
	e.Schedule(t0)
	for _, j := range append(low, whole) {
		if j.State != StateAdmitted {
			t.Fatalf("%s: %s", j.ID, j.WaitReason)
		}
	}
	stops := func(now time.Time, want DecisionKind) *Job {
		t.Helper()
		var victim *Job
		for _, d := range e.Schedule(now) {
			switch {
			case d.Kind == want && victim == nil:
				victim = d.Job
			case d.Kind == DecisionReclaim || d.Kind == DecisionPreempt:
				t.Fatalf("a second stop: %s %s", d.Kind, d.Job.ID)
			}
		}
		if victim == nil || victim.Spec.MIGProfile != "1g.10gb" {
			t.Fatalf("no %s of a 1g.10gb job: %v", want, victim)
		}
		if err := e.Confirm(victim.ID); err != nil {
			t.Fatal(err)
		}
		return victim
	}
	lender := mustSubmit(t, e, migJob("a", 1, "1g.10gb"), t0.Add(time.Minute))
	stops(t0.Add(time.Minute), DecisionReclaim)
	e.Schedule(t0.Add(2 * time.Minute))
	if lender.State != StateAdmitted {
		t.Fatalf("the lender's job after the reclaim: %s", lender.WaitReason)
	}
	checkMIGPlacements(t, e)
	crit := mustSubmit(t, e, JobSpec{Team: "t", Queue: "b", GPUs: 1, MIGProfile: "1g.10gb", PriorityClass: "critical"}, t0.Add(3*time.Minute))
	stops(t0.Add(3*time.Minute), DecisionPreempt)
	e.Schedule(t0.Add(4 * time.Minute))
	if crit.State != StateAdmitted || whole.State != StateAdmitted {
		t.Fatalf("critical %s (%s); whole-GPU job %s", crit.State, crit.WaitReason, whole.State)
	}
	checkMIGPlacements(t, e)
	checkInvariants(t, e, map[string]bool{}, map[string]bool{})
}

// TestMIGAnyCardFollowsQuota: a MIG job that names no card runs on the card
// its queue has quota of, although a cheaper card's instances of that
// profile are free (placement alone would try the cheaper card first).
func TestMIGAnyCardFollowsQuota(t *testing.T) {
	m := migModel()
	m.Cards = append(m.Cards, Card{Name: "A100-40GB", MemoryGiB: 40, Rank: 1})
	m.Clusters[0].Nodes = append(m.Clusters[0].Nodes, NodeGroup{Name: "s", Card: "A100-40GB", GPUs: 2,
		MIG: [][]string{{"1g.10gb", "1g.10gb", "1g.10gb"}}})
	e := mustEngine(t, m)
	j := mustSubmit(t, e, migJob("a", 2, "1g.10gb"), t0)
	e.Schedule(t0)
	if j.State != StateAdmitted || j.Card != "A100-80GB" {
		t.Fatalf("%s on %q: %s", j.State, j.Card, j.WaitReason)
	}
	checkMIGPlacements(t, e)
}

// TestMIGQuotaYAML: the configuration reference's MIG quota parses as written.
func TestMIGQuotaYAML(t *testing.T) {
	var q Queue
	src := "{name: nlp-notebooks, pool: dev, team: nlp, cohort: dev,\n quota: {A100-80GB/1g.10gb: {nominal: 2, borrowing_limit: 2}, L40S-48GB: {nominal: 2}}}"
	if err := yaml.Unmarshal([]byte(src), &q); err != nil {
		t.Fatal(err)
	}
	if got := q.Quota["A100-80GB/1g.10gb"]; got.Nominal != 2 || got.BorrowingLimit == nil || *got.BorrowingLimit != 2 || len(q.Quota) != 2 {
		t.Fatalf("%+v", q.Quota)
	}
}
