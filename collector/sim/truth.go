package sim

import (
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Truth is one planted condition: which job (or process) had it, where, and when.
// Its kind is the finding kind the analyzer should report:
//
//   - idle: a job holds GPUs and memory but its engines are inactive (a notebook
//     between bursts); brief single-tick spikes do not end it;
//
//   - zombie: a process holds GPU memory with no activity after its job ended, or
//     with no job at all (Job is empty);
//
//   - memory_bound: DRAM busy while SM and tensor pipes are mostly unused;
//
//   - wrong_card: a few GB and little compute on an 80 GB card;
//
//   - low_util: a long job whose median SM activity stays low, though it is never
//     idle;
//
//   - compute_bound: a training job whose SM and tensor pipes are busy while DRAM
//     is not (its profile meets computeBound*), from the end of its data loading.
//
//   - hung (Config.RealFleet): a multi-GPU training job from the moment it hung;
//
//   - memory_capacity (Config.RealFleet): an online server holding most of its
//     memory at a few % compute.
//
// With Config.RealFleet, idle also covers idle tenants of time-sliced GPUs,
// wrong_card small jobs busy only in bursts, and zombie processes under a new
// job on the same GPU.
type Truth struct {
	Kind schemas.FindingKind
	// Job is the job key; "" for a stray process no scheduler knows.
	Job      string
	Team     string
	Node     string
	GPUUUIDs []string
	// PID is the process, for a zombie.
	PID uint32
	// Start is when the condition began.
	Start time.Time
	// End is when it ended; zero while it still holds.
	End time.Time
}

// truthRec is a Truth as the fleet keeps it. Intervals are written when they are
// known, which may be before they begin (a notebook's idle stretches are drawn at
// its start); Truth shows only what has begun by now.
type truthRec struct {
	kind            schemas.FindingKind
	job, team, node string
	uuids           []string
	pid             uint32
	startMs, endMs  int64
	dropped         bool
}

// addTruth records r and returns its index + 1 (0 if r is empty); owner, when
// set, is the job whose early end would cut r short.
func (f *Fleet) addTruth(r truthRec, owner *job) int {
	if r.endMs <= r.startMs {
		return 0
	}
	if owner != nil {
		owner.truths = append(owner.truths, len(f.truths))
	}
	f.truths = append(f.truths, r)
	return len(f.truths)
}

// endTruth cuts the record ref (an addTruth result) at endMs, for a process
// killed before its planned end.
func (f *Fleet) endTruth(ref int, endMs int64) {
	if ref > 0 && f.truths[ref-1].endMs > endMs {
		f.truths[ref-1].endMs = endMs
	}
}

// recordJobTruth writes, at j's start, the conditions j will show while it runs.
func (f *Fleet) recordJobTruth(j *job, node string, uuids []string) {
	rec := truthRec{job: j.key, team: j.team, node: node, uuids: uuids, startMs: j.startMs, endMs: j.endMs}
	switch j.kind {
	case kindNotebook:
		for _, s := range j.segs {
			if s.idle && s.fromMs < j.durMs {
				r := rec
				r.kind, r.startMs, r.endMs = schemas.KindIdle, j.startMs+s.fromMs, j.startMs+min(s.toMs, j.durMs)
				f.addTruth(r, j)
			}
		}
	case kindMemoryBound:
		rec.kind = schemas.KindMemoryBound
		f.addTruth(rec, j)
	case kindWrongCard:
		rec.kind = schemas.KindWrongCard
		f.addTruth(rec, j)
	case kindLowUtil:
		rec.kind = schemas.KindLowUtil
		f.addTruth(rec, j)
	case kindTraining:
		if j.prof.sm >= computeBoundSM && j.prof.tensor >= computeBoundTensor && j.prof.dram <= computeBoundDRAM {
			rec.kind, rec.startMs = schemas.KindComputeBound, j.startMs+j.loadMs
			f.addTruth(rec, j)
		}
	case kindOnline:
		if j.memFull {
			rec.kind = schemas.KindMemoryCapacity
			f.addTruth(rec, j)
		}
	}
	if j.hangMs > 0 {
		r := rec
		r.kind, r.startMs = schemas.KindHung, j.startMs+j.hangMs
		f.addTruth(r, j)
	}
}

// A training job is compute-bound when its profile's SM and tensor activity are
// at least, and its DRAM activity at most, these (the analyzer's compute_bound
// defaults: medians over its window, which the profile's symmetric jitter leaves
// in place).
const (
	computeBoundSM     = 0.75
	computeBoundTensor = 0.45
	computeBoundDRAM   = 0.55
)

// truncateJobTruth cuts j's conditions at endMs, for a job that ends before its
// planned end (stopped by an executor); planned ends change nothing.
func (f *Fleet) truncateJobTruth(j *job, endMs int64) {
	for _, i := range j.truths {
		r := &f.truths[i]
		switch {
		case r.startMs >= endMs:
			r.dropped = true
		case r.endMs > endMs:
			r.endMs = endMs
		}
	}
}

// Truth returns the conditions that have begun by the current simulated time,
// ordered by start. End is zero for those that still hold.
func (f *Fleet) Truth() []Truth {
	out := make([]Truth, 0, len(f.truths))
	for _, r := range f.truths {
		if r.dropped || r.startMs > f.nowMs {
			continue
		}
		t := Truth{
			Kind: r.kind, Job: r.job, Team: r.team, Node: r.node, GPUUUIDs: slices.Clone(r.uuids),
			PID: r.pid, Start: time.UnixMilli(r.startMs).UTC(),
		}
		if r.endMs <= f.nowMs {
			t.End = time.UnixMilli(r.endMs).UTC()
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b Truth) int { return a.Start.Compare(b.Start) })
	return out
}

// Holding returns the conditions that hold at the current simulated time (begun,
// not yet ended), ordered by start: Truth without the past, for callers that poll
// it every few simulated minutes over long runs.
func (f *Fleet) Holding() []Truth {
	var out []Truth
	for _, r := range f.truths {
		if r.dropped || r.startMs > f.nowMs || r.endMs <= f.nowMs {
			continue
		}
		out = append(out, Truth{
			Kind: r.kind, Job: r.job, Team: r.team, Node: r.node, GPUUUIDs: slices.Clone(r.uuids),
			PID: r.pid, Start: time.UnixMilli(r.startMs).UTC(),
		})
	}
	slices.SortStableFunc(out, func(a, b Truth) int { return a.Start.Compare(b.Start) })
	return out
}
