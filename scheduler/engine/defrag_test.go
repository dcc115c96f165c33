package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// fragmentedEngine is four nodes of 8 GPUs each running three 2-GPU jobs
// (checkpointable as asked), two GPUs free on each: eight free GPUs that an
// 8-GPU-per-node gang cannot use.
func fragmentedEngine(t *testing.T, checkpointable bool, t0 time.Time) *Engine {
	t.Helper()
	e := mustEngine(t, placedModel(4))
	var jobs []*Job
	for i := range 16 {
		jobs = append(jobs, mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 2, Checkpointable: checkpointable, TimeLimitS: 4 * 3600,
			Labels: map[string]string{"i": fmt.Sprint(i)}}, t0))
	}
	e.Schedule(t0)
	done := map[string]bool{}
	for _, j := range jobs {
		if !j.Running() {
			t.Fatalf("%s did not start: %s", j.ID, j.WaitReason)
		}
		if n := j.Placement[0].Node; !done[n] {
			done[n] = true
			if _, err := e.Finish(j.ID, "succeeded", t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

// snapshot is every job's state and placement and the placement state's jobs:
// what PlanDefrag must leave as it found it.
func snapshot(e *Engine) string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(e.jobs)) {
		j := e.jobs[id]
		out = append(out, fmt.Sprintf("%s %s %v %d", id, j.State, j.Placement, j.q.used))
	}
	return fmt.Sprint(out, e.place.st.Jobs(), e.Fragmentation())
}

func TestDefragPlanFreesANode(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	e := fragmentedEngine(t, true, t0)
	now := t0.Add(2 * time.Minute)
	w := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8, GPUsPerNode: 8, TimeLimitS: 3600}, now)
	e.Schedule(now)
	if w.Running() {
		t.Fatal("the gang started: the fleet is not fragmented")
	}
	if f := e.Fragmentation(); f[0].Free != 8 || f[0].Stranded != 8 {
		t.Fatalf("figure %+v, want 8 free, 8 stranded", f)
	}
	before := snapshot(e)
	plans := e.PlanDefrag(now, "", "", DefragOptions{})
	if after := snapshot(e); after != before {
		t.Fatalf("planning changed the engine:\n%s\n%s", before, after)
	}
	if len(plans) != 1 {
		t.Fatalf("plans %+v, want one", plans)
	}
	p := plans[0]
	if p.For != w.ID || p.Card != "H100-80GB" || p.Cluster != "c1" || len(p.Nodes) != 1 || len(p.Nodes[0].GPUs) != 8 {
		t.Fatalf("plan %+v", p)
	}
	if p.MovedGPUs() != 6 || len(p.Moves) != 3 {
		t.Fatalf("plan moves %d GPUs in %d jobs, want 6 in 3: %s", p.MovedGPUs(), len(p.Moves), p)
	}
	dest := map[string]int{}
	for _, m := range p.Moves {
		if m.From != p.Nodes[0].Node || len(m.To) != 1 || m.To[0].Node == m.From {
			t.Fatalf("move %+v does not free %s", m, p.Nodes[0].Node)
		}
		dest[m.To[0].Node] += m.GPUs
	}
	if len(dest) != 3 {
		t.Fatalf("moves go to %v, want one per other node", dest)
	}

	// Carried out: the jobs are stopped for w, requeued after their grace, and
	// w starts on the node they left; they start again where there is room.
	decs, err := e.Defragment(p, "fragmentation", now)
	if err != nil || len(decs) != 3 {
		t.Fatalf("Defragment: %v, %d decisions", err, len(decs))
	}
	for _, d := range decs {
		if d.Kind != DecisionReclaim || d.For != w || !d.Requeue {
			t.Fatalf("decision %+v", d)
		}
		if err := e.Confirm(d.Job.ID); err != nil {
			t.Fatal(err)
		}
	}
	later := now.Add(decs[0].Grace + time.Second)
	e.Schedule(later)
	e.Schedule(later)
	if !w.Running() || w.Placement[0].Node != p.Nodes[0].Node {
		t.Fatalf("w is %s on %v (%s), want running on %s", w.State, w.Placement, w.WaitReason, p.Nodes[0].Node)
	}
	for _, m := range p.Moves {
		if j := e.jobs[m.Job]; !j.Running() {
			t.Fatalf("moved job %s is %s: %s", m.Job, j.State, j.WaitReason)
		}
	}
	checkPlacements(t, e)
	if f := e.Fragmentation(); f[0].Free != 0 {
		t.Fatalf("after the moves: %+v", f)
	}
}

// TestDefragPlanRefuses: nothing is planned when the jobs that would move are
// not checkpointable, when the gang does not need gpus_per_node (it spans
// nodes), or when the plan is stale by the time it is carried out.
func TestDefragPlanRefuses(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	now := t0.Add(2 * time.Minute)
	e := fragmentedEngine(t, false, t0)
	mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8, GPUsPerNode: 8}, now)
	e.Schedule(now)
	if p := e.PlanDefrag(now, "", "", DefragOptions{}); len(p) != 0 {
		t.Fatalf("moved jobs that cannot checkpoint: %+v", p)
	}

	e = fragmentedEngine(t, true, t0)
	w := mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8, GPUsPerNode: 8}, now)
	e.Schedule(now)
	if p := e.PlanDefrag(now, "", "", DefragOptions{Movable: func(*Job) bool { return false }}); len(p) != 0 {
		t.Fatalf("moved jobs the policy keeps: %+v", p)
	}
	if p := e.PlanDefrag(now, "c2", "", DefragOptions{}); len(p) != 0 {
		t.Fatalf("planned in a cluster not asked: %+v", p)
	}
	if p := e.PlanDefrag(now, "", "H100-80GB", DefragOptions{MaxMoves: 2}); len(p) != 0 {
		t.Fatalf("a plan of 3 moves under a bound of 2: %+v", p)
	}
	plans := e.PlanDefrag(now, "", "", DefragOptions{})
	if len(plans) != 1 {
		t.Fatalf("plans %+v", plans)
	}
	stale := plans[0]
	if _, err := e.Finish(stale.Moves[0].Job, "succeeded", now); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Defragment(stale, "fragmentation", now); err == nil {
		t.Fatal("a stale plan was carried out")
	}
	if w.owed != 0 || slices.ContainsFunc(e.reclaiming, func(j *Job) bool { return true }) {
		t.Fatal("a refused plan changed the engine")
	}

	e = fragmentedEngine(t, true, t0)
	mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: 8}, now)
	e.Schedule(now)
	if p := e.PlanDefrag(now, "", "", DefragOptions{}); len(p) != 0 {
		t.Fatalf("a gang that spans nodes got a plan: %+v", p)
	}
}

// TestPropertyDefragKeepsGangsAndReservations: over random fleets and job
// streams, a plan leaves the engine as it was; every move takes a whole,
// checkpointable job off one node; the waiting gang gets gpus_per_node on each
// of its nodes; no two placements of a plan, nor any job left running, share a
// GPU; nothing the plan places sits on another job's reserved GPUs while that
// reservation holds; and carried out, the plan keeps every GPU given once.
func TestPropertyDefragKeepsGangsAndReservations(t *testing.T) {
	plans, carried, started := 0, 0, 0
	for seed := range int64(300) {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		nodes := 3 + r.IntN(5)
		e := mustEngine(t, placedModel(nodes))
		now := t0
		for asked := 0; asked < 8*nodes; {
			g := []int{1, 1, 2, 2, 2, 4, 8}[r.IntN(7)]
			asked += g
			spec := JobSpec{Team: "t", Queue: "a", GPUs: g, Checkpointable: r.IntN(4) > 0, TimeLimitS: int64(600 * (1 + r.IntN(24)))}
			if g >= 4 && r.IntN(2) == 0 {
				spec.GPUsPerNode = g
			}
			mustSubmit(t, e, spec, now)
			now = now.Add(time.Minute)
			e.Schedule(now)
		}
		for _, id := range slices.Sorted(maps.Keys(e.jobs)) {
			if j := e.jobs[id]; j.Running() && r.IntN(3) == 0 {
				if _, err := e.Finish(id, "succeeded", now); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 1 + r.IntN(3) {
			per := []int{4, 8}[r.IntN(2)]
			mustSubmit(t, e, JobSpec{Team: "t", Queue: "a", GPUs: per * (1 + r.IntN(2)), GPUsPerNode: per, TimeLimitS: 3600}, now)
		}
		e.Schedule(now)
		before := snapshot(e)
		ps := e.PlanDefrag(now, "", "", DefragOptions{MaxMoves: 1 + r.IntN(8)})
		if after := snapshot(e); after != before {
			t.Fatalf("seed %d: planning changed the engine", seed)
		}
		checkDefragPlans(t, seed, e, ps, now)
		plans += len(ps)
		if len(ps) == 0 {
			continue
		}
		decs, err := e.Defragment(ps[0], "fragmentation", now)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		settle(e, decs, func() bool { return false })
		e.Schedule(now) // every pool's reclaim grace is 0 here
		checkPlacements(t, e)
		carried++
		if w := e.jobs[ps[0].For]; w.Running() {
			started++
		} else {
			t.Logf("seed %d: %s waits after %s: %s", seed, w.ID, ps[0], w.WaitReason)
		}
	}
	t.Logf("%d plans over 300 streams; %d of %d gangs served first started once their moves were done", plans, started, carried)
	if started != carried {
		t.Fatalf("%d of %d gangs a plan was carried out for did not start", carried-started, carried)
	}
	if plans < 30 {
		t.Fatalf("only %d plans over 300 streams: the property is barely exercised", plans)
	}
}

// checkDefragPlans checks plans against the engine they were made from.
func checkDefragPlans(t *testing.T, seed int64, e *Engine, plans []DefragPlan, now time.Time) {
	t.Helper()
	held := map[string]string{} // node/gpu → holder, after the plans
	moved := map[string]bool{}
	for _, p := range plans {
		for _, m := range p.Moves {
			moved[m.Job] = true
		}
	}
	take := func(who string, nodes []placement.NodeAlloc) {
		for _, a := range nodes {
			for _, g := range a.GPUs {
				k := fmt.Sprintf("%s/%d", a.Node, g)
				if o, dup := held[k]; dup {
					t.Fatalf("seed %d: GPU %s given to %s and %s", seed, k, o, who)
				}
				held[k] = who
			}
		}
	}
	for _, j := range e.jobs {
		if j.Running() && !moved[j.ID] {
			take(j.ID, j.Placement)
		}
	}
	reservedOff := func(who string, nodes []placement.NodeAlloc, limit time.Duration, except string) {
		for _, rs := range e.place.resv {
			if rs.Job == except || (!rs.End.IsZero() && !rs.End.After(now)) {
				continue
			}
			hold := rs.Hold
			if hold.IsZero() {
				hold = rs.Start
			}
			if !hold.Before(now.Add(limit)) {
				continue // it ends before the reservation holds
			}
			for _, a := range rs.Placement.Nodes() {
				for _, b := range nodes {
					if a.Node == b.Node && slices.ContainsFunc(a.GPUs, func(g int) bool { return slices.Contains(b.GPUs, g) }) {
						t.Fatalf("seed %d: %s placed on %s, reserved for %s from %s", seed, who, a.Node, rs.Job, hold)
					}
				}
			}
		}
	}
	for _, p := range plans {
		w := e.jobs[p.For]
		n := 0
		for _, a := range p.Nodes {
			if len(a.GPUs) != w.Spec.GPUsPerNode {
				t.Fatalf("seed %d: %s gets %d GPUs on %s, asked %d per node", seed, p.For, len(a.GPUs), a.Node, w.Spec.GPUsPerNode)
			}
			n += len(a.GPUs)
		}
		if n != w.Spec.GPUs || w.State != StateQueued {
			t.Fatalf("seed %d: plan %s for a %s job of %d GPUs", seed, p, w.State, w.Spec.GPUs)
		}
		for _, m := range p.Moves {
			v := e.jobs[m.Job]
			if v.State != StateAdmitted || !v.Spec.Checkpointable || len(v.Placement) != 1 || v.Placement[0].Node != m.From || m.GPUs != v.Spec.GPUs {
				t.Fatalf("seed %d: move %+v of %s job %v", seed, m, v.State, v.Placement)
			}
			got := 0
			for _, a := range m.To {
				got += len(a.GPUs)
			}
			if got != v.Spec.GPUs {
				t.Fatalf("seed %d: move %+v splits or shrinks the gang", seed, m)
			}
			take(m.Job, m.To)
			reservedOff(m.Job, m.To, v.timeLimit(), p.For) // w starts now: its reservation is void
		}
		take(p.For, p.Nodes)
		reservedOff(p.For, p.Nodes, w.timeLimit(), w.ID)
	}
}
