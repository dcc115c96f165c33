package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// Move is one running job a defragmentation plan requeues: stopped on From
// (its whole gang is there), it fits at once on To.
type Move struct {
	Job  string                `json:"job"`
	GPUs int                   `json:"gpus"`
	From string                `json:"from"`
	To   []placement.NodeAlloc `json:"to"`
}

// DefragPlan is the moves that let a waiting job start now on capacity that is
// free but stranded: its gang needs gpus_per_node free on each of its nodes,
// and the cluster's free GPUs are spread over nodes that have fewer.
type DefragPlan struct {
	// For is the waiting job the moves make room for.
	For     string `json:"for"`
	ForGPUs int    `json:"for_gpus"`
	Cluster string `json:"cluster"`
	Card    string `json:"card"`
	// Nodes are the GPUs For would start on once the moves are done.
	Nodes []placement.NodeAlloc `json:"nodes"`
	Moves []Move                `json:"moves"`
}

// MovedGPUs is the GPUs the plan's moves stop and restart.
func (p DefragPlan) MovedGPUs() int {
	n := 0
	for _, m := range p.Moves {
		n += m.GPUs
	}
	return n
}

// String is the plan in words: "requeue a (2 GPUs) from n1 to n3 …, so that w
// (16 GPUs) starts on n1, n2".
func (p DefragPlan) String() string {
	var mv []string
	for _, m := range p.Moves {
		var to []string
		for _, a := range m.To {
			to = append(to, a.Node)
		}
		mv = append(mv, fmt.Sprintf("%s (%d GPUs) from %s to %s", m.Job, m.GPUs, m.From, strings.Join(to, "+")))
	}
	var on []string
	for _, a := range p.Nodes {
		on = append(on, a.Node)
	}
	return fmt.Sprintf("requeue %s, so that %s (%d GPUs) starts on %s", strings.Join(mv, ", "), p.For, p.ForGPUs, strings.Join(on, ", "))
}

// DefragOptions bound what PlanDefrag may move.
type DefragOptions struct {
	// Movable, when set, must also allow a running job to be moved (a policy's
	// pools and opt-out labels).
	Movable func(*Job) bool
	// MaxMoves bounds the jobs all plans together move (default 8).
	MaxMoves int
	// MaxPlans bounds the waiting jobs served (default 4).
	MaxPlans int
	// MaxTries bounds the waiting gangs tried, served or not (default 16):
	// each try searches the fleet.
	MaxTries int
}

// maxMoversPerNode bounds the jobs on one node whose subsets are tried.
const maxMoversPerNode = 10

// maxSubsetTries bounds the subsets of one node's jobs tried.
const maxSubsetTries = 32

// PlanDefrag returns, for the jobs waiting on cluster and card ("" : any) in
// admission order, the moves that would let each start now: a waiting gang
// of whole GPUs with gpus_per_node, whose quota allows it, that does not fit
// although the free GPUs are there, gets the nodes freed cheapest (fewest GPUs
// moved) by requeueing checkpointable, preemptible jobs whose whole gang is on
// one node, each of which must fit again at once elsewhere in its cluster. A
// move never splits a gang (a job moves whole), and neither the moved jobs
// nor the waiting one go on GPUs another job's reservation keeps unless they
// end before it starts. Later plans count the earlier ones as done. It
// changes nothing; call it after Schedule, in the same pass as Defragment.
func (e *Engine) PlanDefrag(now time.Time, cluster, card string, o DefragOptions) []DefragPlan {
	if e.place == nil {
		return nil
	}
	if o.MaxMoves <= 0 {
		o.MaxMoves = 8
	}
	if o.MaxPlans <= 0 {
		o.MaxPlans = 4
	}
	if o.MaxTries <= 0 {
		o.MaxTries = 16
	}
	t := &defragTrial{e: e, now: now}
	defer t.undo()
	var plans []DefragPlan
	tries := 0
	for _, w := range e.order() {
		if len(plans) >= o.MaxPlans || t.moved >= o.MaxMoves || tries >= o.MaxTries {
			break
		}
		cards := e.defragCards(w, card)
		if len(cards) > 0 {
			tries++
		}
		for _, k := range cards {
			if p, ok := t.plan(w, k, cluster, o); ok {
				plans = append(plans, p)
				break
			}
		}
	}
	return plans
}

// defragCards are the resources of whole GPUs (of card, when set) a waiting
// job could be defragmented onto: a gang with gpus_per_node, queued and not
// held or owed anything, whose quota allows it now.
func (e *Engine) defragCards(w *Job, card string) []int {
	if w.State != StateQueued || w.Held || w.pendingVictims > 0 || w.Spec.GPUsPerNode <= 0 || w.Spec.MIGProfile != "" || w.Spec.GPUFraction > 0 {
		return nil
	}
	if ok, _ := w.window.allows(e.now); !ok {
		return nil
	}
	var out []int
	for _, k := range w.cards {
		if e.resProfile[k] != "" || e.resMode[k] != "" || (card != "" && e.cards[e.resCard[k]].Name != card) {
			continue
		}
		if _, why := w.jobQuotaFits(k); why.kind == blockNone {
			out = append(out, k)
		}
	}
	return out
}

// defragTrial is PlanDefrag's changes to the engine, undone at the end: jobs
// vacated (out of the counts and the nodes) and trial placements under
// prefixed IDs.
type defragTrial struct {
	e       *Engine
	now     time.Time
	vacated []*Job
	temps   []string
	moved   int
	seq     int
}

func (t *defragTrial) place(id string, p placement.Placement, end time.Time) error {
	t.seq++
	id = fmt.Sprintf("defrag:%d:%s", t.seq, id)
	if err := t.e.place.st.Place(id, p, end); err != nil {
		return err
	}
	t.temps = append(t.temps, id)
	return nil
}

// rollback undoes the trial back to n temps and v vacated jobs.
func (t *defragTrial) rollback(n, v int) {
	for i := len(t.temps) - 1; i >= n; i-- {
		_ = t.e.place.st.Release(t.temps[i])
	}
	t.temps = t.temps[:n]
	for i := len(t.vacated) - 1; i >= v; i-- {
		t.e.reoccupy(t.vacated[i])
	}
	t.vacated = t.vacated[:v]
}

func (t *defragTrial) undo() { t.rollback(0, 0) }

// others are the reservations except w's own.
func (t *defragTrial) others(w *Job) []*placement.Reservation {
	out := make([]*placement.Reservation, 0, len(t.e.place.resv))
	for _, rs := range t.e.place.resv {
		if rs != w.resv {
			out = append(out, rs)
		}
	}
	return out
}

// plan frees nodes of resource k, one at a time, until w fits, keeping the
// changes when it does. The moved jobs and w start once the moved jobs'
// reclaim grace is over, so that is when they must fit around the
// reservations.
func (t *defragTrial) plan(w *Job, k int, cluster string, o DefragOptions) (DefragPlan, bool) {
	e := t.e
	if e.fitsNow(w, k) {
		return DefragPlan{}, false // it starts without help
	}
	n0, v0, m0 := len(t.temps), len(t.vacated), t.moved
	p := DefragPlan{For: w.ID, ForGPUs: w.Spec.GPUs, Card: e.cards[e.resCard[k]].Name}
	var holds []placement.NodeAlloc
	for range w.Spec.GPUs / w.Spec.GPUsPerNode {
		moves, hold, ok := t.drainOne(w, k, cluster, holds, o)
		if !ok {
			break
		}
		p.Moves, holds = append(p.Moves, moves...), append(holds, hold)
		if pl, ok := t.placeWaiting(w, k, len(holds), t.start(p.Moves)); ok {
			p.Cluster, p.Nodes = pl.Cluster, pl.Nodes()
			return p, true
		}
	}
	t.rollback(n0, v0)
	t.moved = m0
	return DefragPlan{}, false
}

// start is when the jobs of moves will have stopped: now plus the longest of
// their reclaim graces.
func (t *defragTrial) start(moves []Move) time.Time {
	var g time.Duration
	for _, m := range moves {
		g = max(g, t.e.jobs[m.Job].reclaimGrace())
	}
	return t.now.Add(g)
}

// placeWaiting places w on k, started at start, with the last holds trial
// holds released; when it does not fit, it puts them back.
func (t *defragTrial) placeWaiting(w *Job, k, holds int, start time.Time) (placement.Placement, bool) {
	st := t.e.place.st
	type held struct {
		id string
		p  placement.Placement
	}
	var hs []held
	for i := len(t.temps) - 1; i >= 0 && len(hs) < holds; i-- {
		if strings.HasSuffix(t.temps[i], ":"+holdID) {
			p, _ := st.Placed(t.temps[i])
			hs = append(hs, held{t.temps[i], p})
			_ = st.Release(t.temps[i])
		}
	}
	pl, ok, err := st.FindAround(start, t.e.requestOn(w, []int{k}), w.timeLimit(), t.others(w))
	if err == nil && ok && t.place(w.ID, pl, start.Add(w.timeLimit())) == nil {
		t.temps = slices.DeleteFunc(t.temps, func(id string) bool {
			return slices.ContainsFunc(hs, func(h held) bool { return h.id == id })
		})
		return pl, true
	}
	for _, h := range hs {
		_ = st.Place(h.id, h.p, time.Time{})
	}
	return placement.Placement{}, false
}

// holdID marks a trial hold: GPUs freed for the waiting job.
const holdID = "hold"

// drainOne frees gpus_per_node GPUs of one node of k for w, the node whose
// freeing moves the fewest GPUs, and holds them; the moved jobs are placed
// again elsewhere in their cluster.
func (t *defragTrial) drainOne(w *Job, k int, cluster string, held []placement.NodeAlloc, o DefragOptions) ([]Move, placement.NodeAlloc, bool) {
	e := t.e
	need := w.Spec.GPUsPerNode
	byNode := map[string][]*Job{}
	for _, v := range e.jobs {
		if t.movable(v, w, k, cluster, o) {
			n := v.Placement[0].Node
			byNode[n] = append(byNode[n], v)
		}
	}
	type cand struct {
		node string
		sets [][]*Job
	}
	var cands []cand
	for node, vs := range byNode {
		if slices.ContainsFunc(held, func(a placement.NodeAlloc) bool { return a.Node == node }) {
			continue
		}
		extra := need - len(e.place.st.FreeGPUs(node))
		if extra <= 0 || len(vs) > maxMoversPerNode {
			continue // room already (w is kept off it by something else), or too many jobs to choose from
		}
		if sets := coveringSets(vs, extra, o.MaxMoves-t.moved); len(sets) > 0 {
			cands = append(cands, cand{node, sets})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(gpusOf(a.sets[0]), gpusOf(b.sets[0])), cmp.Compare(len(a.sets[0]), len(b.sets[0])), cmp.Compare(a.node, b.node))
	})
	for _, c := range cands {
		for _, set := range c.sets {
			if moves, hold, ok := t.tryDrain(w, c.node, set, need); ok {
				return moves, hold, true
			}
		}
	}
	return nil, placement.NodeAlloc{}, false
}

// tryDrain vacates set from node, holds need of its free GPUs and places each
// job of set again elsewhere; on failure it changes nothing.
func (t *defragTrial) tryDrain(w *Job, node string, set []*Job, need int) ([]Move, placement.NodeAlloc, bool) {
	e := t.e
	st := e.place.st
	n0, v0 := len(t.temps), len(t.vacated)
	for _, v := range set {
		e.vacate(v)
		t.vacated = append(t.vacated, v)
	}
	hold := placement.NodeAlloc{Node: node, GPUs: st.FreeGPUs(node)[:need]}
	hp, err := st.NewPlacement([]placement.NodeAlloc{hold})
	if err != nil || t.place(holdID, hp, time.Time{}) != nil {
		t.rollback(n0, v0)
		return nil, placement.NodeAlloc{}, false
	}
	others := t.others(w)
	moves := make([]Move, 0, len(set))
	for _, v := range set {
		r := e.requestOn(v, []int{e.resOf(v)})
		r.Clusters = []string{v.Cluster}
		start := t.now.Add(v.reclaimGrace())
		pl, ok, err := st.FindAround(start, r, v.timeLimit(), others)
		if err != nil || !ok || t.place(v.ID, pl, start.Add(v.timeLimit())) != nil {
			t.rollback(n0, v0)
			return nil, placement.NodeAlloc{}, false
		}
		moves = append(moves, Move{Job: v.ID, GPUs: v.Spec.GPUs, From: node, To: pl.Nodes()})
	}
	t.moved += len(set)
	return moves, hold, true
}

// movable reports whether running job v may be moved to make room for w on k:
// checkpointable, preemptible by w's rules, its whole gang of whole GPUs on
// one node of k's card in an allowed cluster, and not already being stopped.
func (t *defragTrial) movable(v, w *Job, k int, cluster string, o DefragOptions) bool {
	e := t.e
	if v.State != StateAdmitted || !v.Spec.Checkpointable || !canPreempt(v, w) || !e.stoppable(v) || len(v.Placement) != 1 {
		return false
	}
	if slices.Contains(t.vacated, v) {
		return false
	}
	kv := e.resOf(v)
	if e.resProfile[kv] != "" || e.resMode[kv] != "" || e.resCard[kv] != e.resCard[k] || len(v.Placement[0].GPUs) != v.Spec.GPUs {
		return false
	}
	if (cluster != "" && v.Cluster != cluster) || (w.allowed != nil && !slices.Contains(w.allowedNames, v.Cluster)) {
		return false
	}
	return o.Movable == nil || o.Movable(v)
}

// coveringSets are the subsets of vs (at most max jobs) holding at least
// extra GPUs and none of whose jobs could be left out, fewest GPUs first, at
// most maxSubsetTries of them.
func coveringSets(vs []*Job, extra, max int) [][]*Job {
	slices.SortFunc(vs, func(a, b *Job) int { return cmp.Or(cmp.Compare(b.Spec.GPUs, a.Spec.GPUs), cmp.Compare(a.ID, b.ID)) })
	var out [][]*Job
	for mask := 1; mask < 1<<len(vs); mask++ {
		var set []*Job
		for i, v := range vs {
			if mask&(1<<i) != 0 {
				set = append(set, v)
			}
		}
		g := gpusOf(set)
		if len(set) > max || g < extra || slices.ContainsFunc(set, func(v *Job) bool { return g-v.Spec.GPUs >= extra }) {
			continue
		}
		out = append(out, set)
	}
	slices.SortStableFunc(out, func(a, b []*Job) int { return cmp.Or(cmp.Compare(gpusOf(a), gpusOf(b)), cmp.Compare(len(a), len(b))) })
	if len(out) > maxSubsetTries {
		out = out[:maxSubsetTries]
	}
	return out
}

func gpusOf(vs []*Job) int {
	n := 0
	for _, v := range vs {
		n += v.Spec.GPUs
	}
	return n
}

// Defragment carries out plan p, made by PlanDefrag in this pass: each moved
// job is ordered stopped for p.For, requeued at its place after its reclaim
// grace (a checkpointable job's time to checkpoint), and the waiting job is
// owed the GPUs, so it goes first once they are free. It fails, changing
// nothing, if a job is no longer where the plan found it.
func (e *Engine) Defragment(p DefragPlan, reason string, now time.Time) ([]Decision, error) {
	w := e.jobs[p.For]
	if w == nil || w.State != StateQueued || w.pendingVictims > 0 {
		return nil, fmt.Errorf("%w: defragment for %s: it no longer waits", ErrJobState, p.For)
	}
	k := -1
	for _, c := range w.cards {
		if e.resProfile[c] == "" && e.resMode[c] == "" && e.cards[e.resCard[c]].Name == p.Card {
			k = c
		}
	}
	if k < 0 || len(p.Moves) == 0 {
		return nil, fmt.Errorf("%w: defragment for %s: no moves on card %q", ErrJobState, p.For, p.Card)
	}
	var vs []*Job
	for _, m := range p.Moves {
		v := e.jobs[m.Job]
		if v == nil || v.State != StateAdmitted || len(v.Placement) != 1 || v.Placement[0].Node != m.From {
			return nil, errors.Join(ErrJobState, fmt.Errorf("defragment for %s: %s is no longer running on %s", p.For, m.Job, m.From))
		}
		vs = append(vs, v)
	}
	w.owed = k + 1
	e.touch(w)
	out := make([]Decision, 0, len(vs))
	for _, v := range vs {
		grace := v.reclaimGrace()
		e.markReclaim(v, w, reason, now.Add(grace))
		out = append(out, Decision{Kind: DecisionReclaim, Job: v, For: w, Requeue: true, Grace: grace, Reason: reason})
	}
	return out, nil
}
