package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// cluster is one scheduling domain: its nodes, its queue and the scheduler that
// places queued jobs on free GPUs of the card type they asked for.
type cluster struct {
	index       int
	name        string
	utcOffsetMs int64
	// source is the cluster's scheduler (kubernetes or slurm); jobs started by
	// hand on a node are known only from their processes.
	source      string
	gpusPerNode int
	nodes       []*Node
	queue       []*job
	nextSlurmID uint64
	classes     []*class
	// real: the fleet plants Config.RealFleet's patterns.
	real bool
	// reserved are the slots the scheduler reserves (Fleet.SetReserved): the
	// fleet places nothing of its own there.
	reserved map[outsideKey]bool
	// claimed are the slots of admitted jobs that wait for them (schedule).
	claimed map[outsideKey]bool
}

// reserveAfterMs is how long a job waits before it reserves nodes against
// backfill, so that whole-node jobs are not starved forever.
const reserveAfterMs = int64(time.Hour / time.Millisecond)

// addClass counts node n into the class of its card and MIG layout.
func (c *cluster) addClass(n *Node, typ nodeType) {
	for _, cl := range c.classes {
		if cl.card == typ.card && (cl.mig == nil) == (typ.mig == nil) {
			cl.nodes++
			cl.physGPUs += c.gpusPerNode
			return
		}
	}
	c.classes = append(c.classes, &class{card: typ.card, cardType: n.cardType, mig: typ.mig, nodes: 1, physGPUs: c.gpusPerNode})
}

// cardMatch reports whether node n offers the card a job asked for ("" = any).
func cardMatch(n *Node, card string) bool { return card == "" || n.cardType == card }

// reservation holds a node for a job that has waited too long: other jobs may use
// the node only if they end before untilMs, when the waiting job will fit (EASY
// backfill, with the sim's exact run times standing in for time limits).
type reservation struct {
	n       *Node
	untilMs int64
}

// maxReservations bounds how many waiting jobs hold reservations at once.
const maxReservations = 4

// schedule starts every queued job that fits, in submission order. Smaller jobs
// may backfill past ones that do not fit, but a job that has waited longer than
// reserveAfterMs reserves the nodes it will fit on soonest, so that whole-node
// jobs are not starved.
func (f *Fleet) schedule(c *cluster) {
	if len(c.queue) == 0 {
		return
	}
	var resBuf [maxReservations * 2]reservation
	res := resBuf[:0]
	// Slots the scheduler gave to admitted jobs that wait for them are
	// claimed: the fleet's own placements keep off them.
	clear(c.claimed)
	for _, j := range c.queue {
		for _, a := range j.assigned {
			n := c.node(a.Node)
			if n == nil {
				continue
			}
			if c.claimed == nil {
				c.claimed = map[outsideKey]bool{}
			}
			for k := range a.count() {
				if i := n.slotOf(a, k); i >= 0 {
					c.claimed[outsideKey{n, i}] = true
				}
			}
		}
	}
	kept := c.queue[:0]
	for _, j := range c.queue {
		if j.held {
			kept = append(kept, j) // its gate has not admitted it yet
			continue
		}
		if len(j.assigned) > 0 {
			// The scheduler placed it: it runs there, or waits until it can
			// (a miss means the scheduler's picture of the slots and the
			// fleet's differ: counted, never papered over by placing it
			// elsewhere).
			if c.placeAssigned(j) {
				f.placeRun++
				if j.migOK {
					f.placeRunMIG++
				}
				j.assigned = nil
				f.start(j)
				continue
			}
			if why := c.missReason(j); why != "" && !j.missed {
				j.missed = true
				f.placeMissed++
				f.missWhy[why]++
			}
			kept = append(kept, j)
			continue
		}
		if c.place(j, res, f.nowMs, f.migAsk(j)) {
			f.start(j)
			continue
		}
		kept = append(kept, j)
		if f.nowMs-j.queuedMs > reserveAfterMs && len(res) < maxReservations && !j.migOK {
			res = c.reserve(j, res, f.nowMs)
		}
	}
	clear(c.queue[len(kept):])
	c.queue = kept
}

// usable reports whether j may use node n given the reservations.
func usable(n *Node, j *job, res []reservation, nowMs int64) bool {
	for _, r := range res {
		if r.n == n && nowMs+j.durMs > r.untilMs {
			return false
		}
	}
	return true
}

// reserved reports whether an older waiting job holds node n.
func reserved(n *Node, res []reservation) bool {
	for _, r := range res {
		if r.n == n {
			return true
		}
	}
	return false
}

// readyAt is when gpus GPUs of node n will be free: now for free ones, at their
// job's end for busy ones. GPUs held by leftover processes never free up on their
// own; ok is false if the node cannot take gpus without them.
func readyAt(n *Node, gpus int, nowMs int64) (readyMs int64, ok bool) {
	var ends [maxGPUsPerNode]int64
	k := 0
	for i := range n.slots {
		s := &n.slots[i]
		switch {
		case s.free():
			ends[k] = nowMs
			k++
		case s.job != nil && len(s.procs) == 1:
			ends[k] = s.job.endMs
			k++
		}
	}
	if k < gpus {
		return 0, false
	}
	slices.Sort(ends[:k])
	return ends[gpus-1], true
}

// reserve appends reservations for j on the whole-GPU nodes where it will fit
// soonest. A job keeps the nodes it reserved while they can still take it, so
// that the reservation does not wander from node to node while long jobs
// backfill behind it; a node that would need a zombie's GPU is not reserved (the
// job waits until someone kills the zombie).
func (c *cluster) reserve(j *job, res []reservation, nowMs int64) []reservation {
	perNode := min(j.gpus, c.gpusPerNode)
	need := (j.gpus + c.gpusPerNode - 1) / c.gpusPerNode
	if len(j.reserved) == need {
		until, ok := int64(0), true
		for _, n := range j.reserved {
			ready, fits := readyAt(n, perNode, nowMs)
			if !fits || reserved(n, res) {
				ok = false
				break
			}
			until = max(until, ready)
		}
		if ok {
			for _, n := range j.reserved {
				res = append(res, reservation{n, until})
			}
			return res
		}
	}
	j.reserved = j.reserved[:0]
	type cand struct {
		n       *Node
		readyMs int64
	}
	var cands []cand
	for _, n := range c.nodes {
		if n.mig || n.sliced || !cardMatch(n, j.card) || reserved(n, res) {
			continue
		}
		if ready, ok := readyAt(n, perNode, nowMs); ok {
			cands = append(cands, cand{n, ready})
		}
	}
	if len(cands) < need {
		return res
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.readyMs, b.readyMs) })
	if need > 1 {
		// All nodes of a multi-node job must be of one card type.
		same := cands[:0]
		for _, x := range cands {
			if x.n.cardType == cands[0].n.cardType {
				same = append(same, x)
			}
		}
		if cands = same; len(cands) < need {
			return res
		}
	}
	until := cands[need-1].readyMs
	for _, x := range cands[:need] {
		res = append(res, reservation{x.n, until})
		j.reserved = append(j.reserved, x.n)
	}
	return res
}

// migAsk is the MIG profile the fleet places j on: the one it asked its gate
// for when gated ("" for a job not on MIG, or not gated: that one takes the
// smallest free instance its memory fits).
func (f *Fleet) migAsk(j *job) string {
	if j.migOK && f.gated(j) {
		return j.migProfile
	}
	return ""
}

// place finds GPUs for j and records them in j.slots; false if none fit now.
// A job on MIG takes an instance of profile migProfile ("": any its memory
// fits).
func (c *cluster) place(j *job, res []reservation, nowMs int64, migProfile string) bool {
	j.slots = j.slots[:0]
	if j.migOK {
		// It asked for a MIG slice, as a pod asks for nvidia.com/mig-2g.10gb.
		return c.placeMIG(j, migProfile)
	}
	if j.gpus > c.gpusPerNode {
		return c.placeNodes(j, res, nowMs)
	}
	var best *Node
	bestFree := 0
	for _, n := range c.nodes {
		if n.mig || !cardMatch(n, j.card) || !usable(n, j, res, nowMs) {
			continue
		}
		free := c.freeFor(n, j)
		if free < j.gpus {
			continue
		}
		// Best fit keeps whole nodes free for 8-GPU jobs; among equals the
		// cheaper card goes first.
		if best == nil || free < bestFree || (free == bestFree && n.card.rank < best.card.rank) {
			best, bestFree = n, free
		}
	}
	if best == nil {
		return false
	}
	for i := range best.slots {
		if len(j.slots) < j.gpus && best.slots[i].takes(j) && !c.offLimits(best, i) {
			j.slots = append(j.slots, slotRef{best, i})
		}
	}
	return true
}

// freeFor counts the slots of n that j may take outside the scheduler's
// reservations.
func (c *cluster) freeFor(n *Node, j *job) int {
	if len(c.reserved)+len(c.claimed) == 0 {
		return n.freeFor(j)
	}
	k := 0
	for i := range n.slots {
		if n.slots[i].takes(j) && !c.offLimits(n, i) {
			k++
		}
	}
	return k
}

// offLimits reports whether the fleet keeps its own placements off slot i of
// n: the scheduler reserved it, or gave it to a job that waits for it.
func (c *cluster) offLimits(n *Node, i int) bool {
	k := outsideKey{n, i}
	return c.reserved[k] || c.claimed[k]
}

// placeMIG puts a small one-GPU job on the smallest free MIG instance its memory
// fits in (of profile, when set), outside the scheduler's reserved and claimed
// instances.
func (c *cluster) placeMIG(j *job, profile string) bool {
	var best slotRef
	for _, n := range c.nodes {
		if !n.mig || !cardMatch(n, j.card) {
			continue
		}
		for i := range n.slots {
			s := &n.slots[i]
			if !s.free() || float32(s.fbTotalMiB)*0.9 < float32(j.memMiB) || c.offLimits(n, i) ||
				profile != "" && s.migProfile != profile {
				continue
			}
			if best.n == nil || s.fbTotalMiB < best.slot().fbTotalMiB {
				best = slotRef{n, i}
			}
		}
	}
	if best.n == nil {
		return false
	}
	j.slots = append(j.slots, best)
	return true
}

// placeNodes gives a multi-node job whole free nodes, all of one card type.
func (c *cluster) placeNodes(j *job, res []reservation, nowMs int64) bool {
	need := (j.gpus + c.gpusPerNode - 1) / c.gpusPerNode
	for _, first := range c.nodes {
		if first.mig || first.sliced || !cardMatch(first, j.card) || !usable(first, j, res, nowMs) || first.freeSlots() < c.gpusPerNode {
			continue
		}
		var picked []*Node
		for _, n := range c.nodes {
			if !n.mig && !n.sliced && n.cardType == first.cardType && usable(n, j, res, nowMs) && n.freeSlots() == c.gpusPerNode && c.freeFor(n, j) == c.gpusPerNode {
				picked = append(picked, n)
			}
		}
		if len(picked) < need {
			continue
		}
		for _, n := range picked[:need] {
			for i := range n.slots {
				j.slots = append(j.slots, slotRef{n, i})
			}
		}
		j.slots = j.slots[:j.gpus]
		return true
	}
	return false
}

// placeAssigned puts j on the GPU slots the scheduler placed it on (whole
// GPUs, or MIG instances of the profile it asked for); false, changing
// nothing, if one is not free (or not there).
func (c *cluster) placeAssigned(j *job) bool {
	j.slots = j.slots[:0]
	for _, a := range j.assigned {
		n := c.node(a.Node)
		if n == nil || n.mig != j.migOK {
			j.slots = j.slots[:0]
			return false
		}
		for k := range a.count() {
			i := n.slotOf(a, k)
			if i < 0 || !n.slots[i].takes(j) || j.migOK && n.slots[i].migProfile != j.migProfile {
				j.slots = j.slots[:0]
				return false
			}
			j.slots = append(j.slots, slotRef{n, i})
		}
	}
	if len(j.slots) != j.gpus {
		j.slots = j.slots[:0]
		return false
	}
	return true
}

// node is the cluster's node of that name (nil: none).
func (c *cluster) node(name string) *Node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// count is how many slots a names.
func (a NodeGPUs) count() int { return len(a.GPUs) + len(a.MIG) }

// slotOf is the index in n's slots of a's k-th slot (its GPUs, then its MIG
// instances): a GPU index on a node of whole GPUs, a MIG instance on a MIG
// node; -1 when n has no such slot.
func (n *Node) slotOf(a NodeGPUs, k int) int {
	if k < len(a.GPUs) {
		if g := a.GPUs[k]; !n.mig && g >= 0 && g < len(n.slots) {
			return g
		}
		return -1
	}
	m := a.MIG[k-len(a.GPUs)]
	if !n.mig {
		return -1
	}
	for i := range n.slots {
		if s := &n.slots[i]; int(s.gpuIndex) == m.GPU && s.migIndex == m.Index {
			return i
		}
	}
	return -1
}

// missReason says why the GPUs the scheduler placed j on were not free: what
// held the first slot that was not; "" when each is held only by a job an
// executor has stopped (the scheduler released it on the stop's confirmation;
// its processes exit within the tick and j starts then).
func (c *cluster) missReason(j *job) string {
	for _, a := range j.assigned {
		n := c.node(a.Node)
		if n == nil {
			return "unknown node"
		}
		for k := range a.count() {
			g := n.slotOf(a, k)
			if g < 0 {
				return "no such GPU"
			}
			s := &n.slots[g]
			switch {
			case j.migOK && s.migProfile != j.migProfile:
				return "other MIG profile"
			case s.down:
				return "node down"
			case s.job != nil && s.job.source == schemas.SourceProcess:
				return "hand-started process"
			case s.job != nil && s.job.stopping:
				continue // stopped by an executor: its GPUs free within the tick
			case s.job != nil:
				return "scheduler job"
			}
			for _, p := range s.procs {
				if p.owner == s.job && s.job != nil {
					continue
				}
				switch {
				case p.owner == nil:
					return "stray process"
				case p.owner.state != stateRunning:
					return "zombie"
				}
			}
			if s.sliced {
				return "time-sliced"
			}
		}
	}
	return ""
}
