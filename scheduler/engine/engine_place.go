package engine

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// placer is the engine's placement of jobs on nodes, for a model whose
// clusters list their nodes: admission needs quota AND a concrete placement
// (scheduler/placement), a gang whole or not at all; the head job that does not
// fit gets a reservation, and smaller jobs backfill around it.
type placer struct {
	st  *placement.State
	cfg placement.PlanConfig
	// reserved is the GPUs the last pass reserved for waiting jobs; resv the
	// reservations themselves.
	reserved []placement.NodeAlloc
	resv     []*placement.Reservation
	// outside are the IDs of GPUs held outside the scheduler (HoldOutside).
	outside map[string]bool
}

// newPlacer builds the placement state of m's nodes (nil when it lists none).
func newPlacer(m Model) (*placer, error) {
	if !m.placed() {
		return nil, nil
	}
	st, err := placement.NewState(m.Fleet())
	if err != nil {
		return nil, err
	}
	cfg := m.Placement
	if cfg.Policy == "" {
		cfg.Policy = placement.DefaultPlanConfig().Policy
	}
	return &placer{st: st, cfg: cfg}, nil
}

// observeShape adds a submitted job of whole GPUs to the expected workload of
// each card type it may run on, which the placement's choice of a node weighs
// (placement.State.ObserveShape).
func (e *Engine) observeShape(j *Job) {
	if e.place == nil || e.place.cfg.PackOnly || j.Spec.MIGProfile != "" || j.Spec.GPUFraction > 0 {
		return
	}
	for _, k := range j.cards {
		if e.resProfile[k] == "" && e.resMode[k] == "" {
			e.place.st.ObserveShape(e.cards[e.resCard[k]].Name, j.Spec.GPUsPerNode, j.Spec.GPUs)
		}
	}
}

// Placed reports whether the engine places jobs on nodes.
func (e *Engine) Placed() bool { return e.place != nil }

// request is what j asks of the nodes: its GPUs (or MIG instances) of its
// card types (owed first), in its cluster.
func (e *Engine) request(j *Job) placement.Request { return e.requestOn(j, j.cards) }

// requestOn is request with only cards (of j's) named.
func (e *Engine) requestOn(j *Job, cards []int) placement.Request {
	r := placement.Request{GPUs: j.Spec.GPUs, MIGProfile: j.Spec.MIGProfile, Clusters: j.allowedNames, GPUsPerNode: j.Spec.GPUsPerNode,
		Fraction: j.Spec.GPUFraction, Sharing: placement.Sharing(j.Spec.Sharing), MemoryMiB: j.Spec.GPUMemoryMiB}
	if k := j.owed - 1; k >= 0 && slices.Contains(cards, k) {
		r.Cards = append(r.Cards, e.cards[e.resCard[k]].Name)
	}
	for _, k := range cards {
		if k != j.owed-1 {
			r.Cards = append(r.Cards, e.cards[e.resCard[k]].Name)
		}
	}
	return r
}

// planCards is the cards j's request names in a pass: of several, those its
// quota allows now (all when none does: it waits with the quota's reason).
// placement.Plan asks the quota only of the first card the gang fits, so a
// card the queue has no quota of, tried first, would refuse the job for ever.
func (e *Engine) planCards(j *Job) []int {
	if len(j.cards) < 2 {
		return j.cards
	}
	fits := func(k int) bool { _, why := j.jobQuotaFits(k); return why.kind == blockNone }
	n := 0
	for _, k := range j.cards {
		if fits(k) {
			n++
		}
	}
	if n == 0 || n == len(j.cards) {
		return j.cards // no allocation in the common cases
	}
	ok := make([]int, 0, n)
	for _, k := range j.cards {
		if fits(k) {
			ok = append(ok, k)
		}
	}
	return ok
}

// placedRes is the resource a placement holds: its card type, or its card's
// MIG resource of its profile.
func (e *Engine) placedRes(pl placement.Placement) int {
	if pl.MIGProfile != "" {
		return e.cardIdx[MIGResource(pl.Card, pl.MIGProfile)]
	}
	if pl.Sharing != "" {
		return e.cardIdx[FractionResource(pl.Card, pl.Sharing)]
	}
	return e.cardIdx[pl.Card]
}

// compile checks that j fits the empty fleet and keeps its compiled request.
func (e *Engine) compile(j *Job) error { return e.compileOn(j, j.cards) }

// compileOn is compile of the request on cards (of j's).
func (e *Engine) compileOn(j *Job, cards []int) error {
	if e.place == nil {
		return nil
	}
	c, err := e.place.st.Compile(e.requestOn(j, cards))
	if err != nil {
		if errors.Is(err, placement.ErrNeverFits) {
			return fmt.Errorf("%w: %d %s fit on no cluster's nodes as one gang (%v); ask for fewer or another card", ErrOverQuota, j.amount(), j.Spec.unit(), err)
		}
		return fmt.Errorf("%w: %v", ErrInvalidJob, err)
	}
	j.req, j.reqOwed, j.reqCards = c, j.owed, cards
	return nil
}

// placeable keeps the cards (of several) whose nodes could ever hold j (all
// of them without nodes): a job whose quota allows one card and whose gang fits
// only another's nodes could never run, and would wait for ever.
func (e *Engine) placeable(j *Job, cards []int) ([]int, error) {
	if e.place == nil || len(cards) < 2 {
		return cards, nil // one card: compile names why it never fits
	}
	var out []int
	var never error
	for _, k := range cards {
		r := e.request(j)
		r.Cards = []string{e.cards[e.resCard[k]].Name}
		switch _, err := e.place.st.Compile(r); {
		case err == nil:
			out = append(out, k)
		case errors.Is(err, placement.ErrNeverFits):
			never = err
		default:
			return nil, fmt.Errorf("%w: %v", ErrInvalidJob, err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %d %s fit on no cluster's nodes as one gang (%v); ask for fewer or another card", ErrOverQuota, j.amount(), j.Spec.unit(), never)
	}
	return out, nil
}

// expectedEnd is when a running job reaches its time limit (zero: none).
func expectedEnd(j *Job) time.Time {
	if l := j.timeLimit(); l > 0 {
		return j.AdmitTime.Add(l)
	}
	return time.Time{}
}

// unplace gives back the nodes' GPUs j holds.
func (e *Engine) unplace(j *Job) {
	if e.place != nil {
		_ = e.place.st.Release(j.ID) // a job restored without its placement holds none
	}
}

// replace puts j back on the GPUs its Placement names (a restart, a trial
// release in the victim search).
func (e *Engine) replace(j *Job) error {
	if e.place == nil {
		return nil
	}
	if len(j.Placement) == 0 {
		return errors.New("no placement recorded")
	}
	p, err := e.place.st.NewPlacement(j.Placement)
	if err != nil {
		return err
	}
	return e.place.st.Place(j.ID, p, expectedEnd(j))
}

// fitsNow reports whether j would be admitted on card k now, by quota and,
// with nodes, by a placement (the victim search's test).
func (e *Engine) fitsNow(j *Job, k int) bool {
	if e.place == nil {
		c, _, _ := e.fitsOn(j, k)
		return c != nil
	}
	if _, why := j.jobQuotaFits(k); why.kind != blockNone {
		return false
	}
	// Only where no other job's reservation keeps it off: stopping jobs on
	// reserved GPUs would free them for the reservation, not for j.
	r := placement.Request{GPUs: j.Spec.GPUs, MIGProfile: e.resProfile[k], Clusters: j.allowedNames, GPUsPerNode: j.Spec.GPUsPerNode,
		Fraction: j.Spec.GPUFraction, Sharing: e.resMode[k], MemoryMiB: j.Spec.GPUMemoryMiB,
		Cards: []string{e.cards[e.resCard[k]].Name}}
	others := make([]*placement.Reservation, 0, len(e.place.resv))
	for _, rs := range e.place.resv {
		if rs != j.resv {
			others = append(others, rs)
		}
	}
	_, ok, err := e.place.st.FindAround(e.now, r, j.timeLimit(), others)
	return err == nil && ok
}

// vacate and reoccupy take a running job's GPUs out of the counts and the
// nodes, and put them back (the victim search's trial).
func (e *Engine) vacate(v *Job) {
	e.release(v)
	e.unplace(v)
}

func (e *Engine) reoccupy(v *Job) {
	e.occupy(v)
	_ = e.replace(v) // its GPUs were free: nothing took them in between
}

// order is the queued jobs in admission order: those owed reclaimed GPUs first
// (so that a requeued borrower does not take them back), then those that held
// a reservation after the last pass, then priority, fair share and
// submission. Shares are those at the pass's start (counting admission
// recomputes them after each admission).
//
// A reservation keeps its job ahead of the jobs that come after it: otherwise a
// job that arrives later from a queue with a smaller share goes first in the
// next pass, is placed on the reserved GPUs with a limit past the reservation's
// start, and moves the start out — in every pass, so the reserved job waits
// for ever. Kept, a reservation's start only moves earlier while running jobs
// keep their limits (a reclaim owed GPUs still goes first).
func (e *Engine) order() []*Job {
	h := &headHeap{}
	for _, q := range e.queues {
		if len(q.pending) > 0 {
			h.items = append(h.items, e.head(q, 0))
		}
	}
	heap.Init(h)
	var out []*Job
	for h.Len() > 0 {
		hd := heap.Pop(h).(head)
		out = append(out, hd.q.pending[hd.i])
		if hd.i+1 < len(hd.q.pending) {
			heap.Push(h, e.head(hd.q, hd.i+1))
		}
	}
	slices.SortStableFunc(out, func(a, b *Job) int {
		return cmp.Or(cmp.Compare(min(b.owed, 1), min(a.owed, 1)), cmp.Compare(b2i(len(b.Reserved) > 0), b2i(len(a.Reserved) > 0)))
	})
	return out
}

// placePass is admitPass for a model with nodes: one placement.Plan over the
// queue in the engine's order, with the quota check as its AdmitFunc.
func (e *Engine) placePass(now time.Time, borrowing bool, out []Decision) []Decision {
	var jobs []*Job
	var queue []placement.Pending
	for _, j := range e.order() {
		if j.Held {
			j.WaitReason = "held: reclaimed while idle; waits for its owner to resume it (gpupool jobs resume " + j.ID + ")"
			continue
		}
		if ok, reason := j.window.allows(now); !ok {
			if borrowing {
				out = e.wait(j, block{kind: blockWindow, why: reason}, out)
			}
			continue
		}
		if cards := e.planCards(j); j.reqOwed != j.owed || !slices.Equal(cards, j.reqCards) {
			if e.compileOn(j, cards) != nil && e.compile(j) != nil {
				continue // it compiled at submit; a card no longer fits is not possible
			}
		}
		jobs = append(jobs, j)
		queue = append(queue, placement.Pending{ID: j.ID, Req: j.req, TimeLimit: j.timeLimit(), Queued: j.QueuedAt, Prior: j.resv})
	}
	if len(queue) == 0 {
		return out
	}
	// What holds a GPU outside the scheduler has no time limit (a zombie may
	// hold it for ever while no policy kills it). Counted as leaving only after
	// every running job with a time limit has reached it (and outsideHorizon
	// from now at the soonest, renewed every pass), a reservation takes GPUs the
	// scheduler's own jobs will give back before ones held outside it, and a
	// job that needs those still gets one: the work the scheduler does not
	// admit keeps off reserved GPUs (Reserved), so the reservation drains them
	// as that work ends, instead of never being made.
	if len(e.place.outside) > 0 {
		last := now.Add(outsideHorizon)
		for _, j := range e.jobs {
			if j.Running() {
				if end := expectedEnd(j); end.After(last) {
					last = end
				}
			}
		}
		for id := range e.place.outside {
			_ = e.place.st.SetEnd(id, last.Add(time.Minute))
		}
	}
	refused := map[*Job]block{}
	idx := make(map[string]*Job, len(jobs))
	for _, j := range jobs {
		idx[j.ID] = j
	}
	admit := func(p *placement.Pending, pl placement.Placement) (bool, string) {
		j := idx[p.ID]
		k := e.placedRes(pl)
		borrow, why := j.jobQuotaFits(k)
		if why.kind != blockNone {
			refused[j] = why
			return false, why.String(e)
		}
		if borrow > 0 && !borrowing {
			refused[j] = block{kind: blockNone}
			return false, "needs borrowed quota"
		}
		out = e.admit(j, k, e.clusters[e.clusterIdx[pl.Cluster]], borrow, now, out)
		j.Placement, j.ExpectedStart = pl.Nodes(), time.Time{}
		return true, ""
	}
	decisions := e.place.st.Plan(now, queue, e.place.cfg, admit)
	if borrowing {
		e.place.reserved, e.place.resv = e.place.reserved[:0], e.place.resv[:0]
		for _, d := range decisions {
			if d.Reservation != nil {
				e.place.reserved = append(e.place.reserved, d.Reservation.Placement.Nodes()...)
				e.place.resv = append(e.place.resv, d.Reservation)
			}
		}
	}
	for i, d := range decisions {
		j := jobs[i]
		j.Reserved, j.resv = reservedNodes(d), d.Reservation
		if !d.Start {
			e.reserveWhy(j, d.Reservation)
		}
		if d.Start || !borrowing {
			continue
		}
		why, quota := refused[j]
		if j.pendingVictims > 0 {
			out = e.wait(j, block{kind: blockVictims, n: j.pendingVictims}, out)
			continue
		}
		victims, kind, forWhy := e.findVictims(j)
		if len(victims) > 0 {
			j.owed = e.resOf(victims[0]) + 1
			e.touch(j)
			for _, v := range victims {
				grace := v.reclaimGrace()
				e.markReclaim(v, j, forWhy, now.Add(grace))
				out = append(out, Decision{Kind: kind, Job: v, For: j, Requeue: true, Grace: grace, Reason: forWhy})
			}
			out = e.wait(j, block{kind: blockVictims, n: j.pendingVictims}, out)
			continue
		}
		j.ExpectedStart = d.ExpectedStart
		if quota {
			out = e.wait(j, why, out)
			continue
		}
		out = e.waitPlaced(j, d, out)
	}
	for _, q := range e.queues {
		q.pending = slices.DeleteFunc(q.pending, func(j *Job) bool { return j.State != StateQueued })
	}
	return out
}

// waitPlaced records why j waits for nodes; a decision is returned only when
// the kind of wait changes (the words, with times, are kept up to date).
func (e *Engine) waitPlaced(j *Job, d placement.Decision, out []Decision) []Decision {
	b := block{kind: blockPlace, why: string(d.Why)}
	reason := "placement: " + d.Reason()
	if j.waitBlock == b {
		j.WaitReason = reason
		return out
	}
	j.waitBlock, j.WaitReason = b, reason
	e.touch(j)
	return append(out, Decision{Kind: DecisionWait, Job: j, Reason: reason})
}

// outsidePrefix names, in the placement state, a GPU held by what the
// scheduler does not admit (a process started by hand, a zombie, a node that
// is down): no job is placed on it until it is free again.
const outsidePrefix = "outside:"

// outsideHorizon is how soon, at the soonest, a reservation counts on a GPU held
// outside the scheduler to be free: renewed every pass, so it is a drain, not a
// promise.
const outsideHorizon = time.Hour

// HoldOutside marks GPU gpu of node as held (held) or freed by something the
// scheduler did not admit, so that placement keeps off it; a GPU partitioned by
// MIG is held whole, every instance of it (HoldOutsideMIG holds one). It has
// no expected end: a reservation never counts on it. A GPU already given to
// one of the engine's jobs is an error naming that job: the two pictures
// differ.
func (e *Engine) HoldOutside(node string, gpu int, held bool) error {
	if e.place == nil {
		return nil
	}
	a := placement.NodeAlloc{Node: node, GPUs: []int{gpu}}
	if layout := e.migLayout(node, gpu); len(layout) > 0 {
		a.GPUs = nil
		for i, prof := range layout {
			a.Slices = append(a.Slices, placement.Slice{GPU: gpu, Index: i, Profile: prof})
		}
	}
	return e.holdOutside(fmt.Sprintf("%s%s/%d", outsidePrefix, node, gpu), a, fmt.Sprintf("%s GPU %d", node, gpu), held)
}

// HoldOutsideMIG is HoldOutside for one MIG instance: index in the layout of
// GPU gpu of node.
func (e *Engine) HoldOutsideMIG(node string, gpu, index int, held bool) error {
	if e.place == nil {
		return nil
	}
	a := placement.NodeAlloc{Node: node, Slices: []placement.Slice{{GPU: gpu, Index: index}}}
	return e.holdOutside(fmt.Sprintf("%s%s/%d.%d", outsidePrefix, node, gpu, index), a, fmt.Sprintf("%s GPU %d MIG instance %d", node, gpu, index), held)
}

// holdOutside holds (or frees) a under id for something outside the scheduler.
func (e *Engine) holdOutside(id string, a placement.NodeAlloc, what string, held bool) error {
	if !held {
		delete(e.place.outside, id)
		if err := e.place.st.Release(id); err != nil && !errors.Is(err, placement.ErrUnknownJob) {
			return err
		}
		return nil
	}
	if _, ok := e.place.st.Placed(id); ok {
		return nil
	}
	p, err := e.place.st.NewPlacement([]placement.NodeAlloc{a})
	if err != nil {
		return fmt.Errorf("hold %s outside the scheduler: %w", what, err)
	}
	if err := e.place.st.Place(id, p, time.Time{}); err != nil {
		return fmt.Errorf("hold %s outside the scheduler: %w (held by %s)", what, err, e.holder(a))
	}
	if e.place.outside == nil {
		e.place.outside = map[string]bool{}
	}
	e.place.outside[id] = true
	return nil
}

// migLayout is the MIG layout of GPU gpu of node (nil: not partitioned, or no
// such GPU).
func (e *Engine) migLayout(node string, gpu int) []string {
	for _, c := range e.place.st.Fleet().Clusters {
		for _, n := range c.Nodes {
			if n.Name == node && gpu >= 0 && gpu < len(n.MIG) {
				return n.MIG[gpu]
			}
		}
	}
	return nil
}

// holder names the jobs the engine placed on what a holds ("" if none).
func (e *Engine) holder(want placement.NodeAlloc) string {
	var out []string
	for _, id := range e.place.st.Jobs() {
		p, _ := e.place.st.Placed(id)
		for _, a := range p.Nodes() {
			if a.Node == want.Node && overlaps(a, want) {
				out = append(out, id)
				break
			}
		}
	}
	return strings.Join(out, ", ")
}

// overlaps reports whether a and b, on one node, share a GPU or an instance.
func overlaps(a, b placement.NodeAlloc) bool {
	for _, g := range b.GPUs {
		if slices.Contains(a.GPUs, g) {
			return true
		}
	}
	for _, s := range b.Slices {
		if slices.ContainsFunc(a.Slices, func(t placement.Slice) bool { return t.GPU == s.GPU && t.Index == s.Index }) {
			return true
		}
	}
	return false
}

// Reserved is the GPUs the last pass reserved for waiting jobs, by node.
func (e *Engine) Reserved() []placement.NodeAlloc {
	if e.place == nil {
		return nil
	}
	return e.place.reserved
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
