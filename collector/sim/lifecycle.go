package sim

import (
	"slices"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Reruns and leftover processes.
const (
	// pRerun is the chance that a failed job is resubmitted as a new attempt.
	pRerun = 0.8
	// maxAttempts bounds reruns of a job that keeps failing.
	maxAttempts = 3
	// pLongZombie is the chance a leftover process outlives a typical demo run
	// (it lives for days).
	pLongZombie = 0.1
)

// submit puts j in its cluster's queue. Jobs a scheduler knows get their key and
// a submit event now; jobs started by hand on a node are known only once their
// process runs, so their key and submit event come at start.
func (f *Fleet) submit(j *job) {
	j.state, j.queuedMs = stateQueued, f.nowMs
	if j.placeMs == 0 {
		j.placeMs = f.nowMs
	}
	f.queued++
	c := j.c
	if j.source != schemas.SourceProcess {
		j.key = f.newKey(j)
		f.emit(j.submitEvent(f.nowMs))
	}
	// In order of place: a requeued attempt goes ahead of work submitted after
	// its first attempt.
	i := len(c.queue)
	for i > 0 && c.queue[i-1].placeMs > j.placeMs {
		i--
	}
	c.queue = slices.Insert(c.queue, i, j)
	f.arrive(j)
}

// newKey names a scheduler-known attempt the way its scheduler would.
func (f *Fleet) newKey(j *job) string {
	switch j.source {
	case schemas.SourceSlurm:
		j.c.nextSlurmID += 1 + uint64(f.r.IntN(25)) // other users' jobs take IDs too
		return "slurm/" + j.c.name + "/" + strconv.FormatUint(j.c.nextSlurmID, 10)
	default:
		return "k8s/" + j.team + "-" + j.project + "/" + formatUUID(f.r.Uint64(), f.r.Uint64(), true)
	}
}

func (j *job) submitEvent(atMs int64) schemas.JobEvent {
	e := schemas.JobEvent{
		TimeMs: atMs, Job: j.key, Event: schemas.EventSubmit, Cluster: j.c.name,
		Team: j.team, Project: j.project, Queue: j.queue, Pool: j.pool, ModelName: j.model,
		Workload: j.workload, GPUs: uint32(j.gpus), Card: j.card,
		Attempt: uint32(j.attempt), RerunOf: j.rerunOf, Source: j.source,
	}
	if j.requeued {
		e.Labels = map[string]string{LabelFirstSubmit: time.UnixMilli(j.placeMs).UTC().Format(time.RFC3339Nano)}
	}
	return e
}

// baseEvent is an event after submit: it repeats only what identifies the job.
func (j *job) baseEvent(atMs int64, ev string) schemas.JobEvent {
	return schemas.JobEvent{
		TimeMs: atMs, Job: j.key, Event: ev, Cluster: j.c.name,
		Attempt: uint32(j.attempt), Source: j.source,
	}
}

func (f *Fleet) emit(e schemas.JobEvent) { f.out = append(f.out, e) }

// memFor is the memory j holds on a unit of fbTotalMiB.
func (j *job) memFor(fbTotalMiB uint32) uint32 {
	if j.memMiB > 0 {
		return min(j.memMiB, uint32(float32(fbTotalMiB)*0.9))
	}
	return uint32(j.memFrac * float32(fbTotalMiB))
}

// start runs j on the slots placement chose: one process per unit, the admit and
// start events, and the truth of the waste the job will show.
func (f *Fleet) start(j *job) {
	j.state, j.startMs, j.endMs = stateRunning, f.nowMs, f.nowMs+j.durMs
	f.queued--
	f.running++
	f.allocated += len(j.slots)
	var nodes, uuids []string
	for _, ref := range j.slots {
		s := ref.slot()
		s.job = j
		s.procs = append(s.procs, proc{pid: ref.n.newPID(f.r.Uint32()), name: j.procName, owner: j, memMiB: min(j.memFor(s.shareMiB()), s.leftMiB())})
		if len(nodes) == 0 || nodes[len(nodes)-1] != ref.n.name {
			nodes = append(nodes, ref.n.name)
		}
		uuids = append(uuids, s.uuid)
	}
	if j.source == schemas.SourceProcess {
		first := j.slots[0]
		pid := first.slot().procs[len(first.slot().procs)-1].pid
		j.key = "proc/" + first.n.name + "/" + strconv.FormatUint(uint64(pid), 10) + "/" + strconv.FormatInt(f.nowMs/1000, 10)
		f.emit(j.submitEvent(f.nowMs))
	}
	f.runningJobs[j.key] = j
	delete(f.waiting, j.key)
	f.emit(j.baseEvent(f.nowMs, schemas.EventAdmit))
	ev := j.baseEvent(f.nowMs, schemas.EventStart)
	ev.Nodes, ev.GPUUUIDs = nodes, uuids
	f.emit(ev)
	f.recordJobTruth(j, nodes[0], uuids)
	f.push(event{atMs: j.endMs, kind: evEnd, j: j})
	f.planPreemption(j)
}

// finish ends j now with the given status: its processes exit (except a leaked
// one, which becomes a zombie), a failure may leave an XID on its first GPU, and
// a failed attempt may be rerun.
func (f *Fleet) finish(j *job, status string, exitCode int32) {
	j.state, j.endMs = stateEnded, f.nowMs
	f.running--
	f.ended++
	f.allocated -= len(j.slots)
	// What follows the end (a zombie's life, a rerun) is drawn from the job's own
	// stream, so it does not depend on what else happened in the fleet.
	fate := j.fate()
	zombie := -1 // index of the leaked process in the first slot's procs
	for idx, ref := range j.slots {
		s := ref.slot()
		s.job = nil
		kept := s.procs[:0]
		for _, p := range s.procs {
			switch {
			case p.owner != j:
				kept = append(kept, p)
			case idx == 0 && j.leaks:
				zombie = len(kept)
				kept = append(kept, p)
			}
		}
		clear(s.procs[len(kept):])
		s.procs = kept
		if idx == 0 && status == schemas.StatusFailed && j.xid != 0 && !j.lost {
			s.xid, s.xidMs = j.xid, f.nowMs
		}
	}
	reason, code, label := endReason(j, status, exitCode)
	ev := j.baseEvent(f.nowMs, schemas.EventEnd)
	ev.Status, ev.ExitCode = status, code
	if label != "" {
		ev.Labels = map[string]string{LabelEndReason: label}
	}
	ev.Labels = outputLabels(ev.Labels, j, status, f.nowMs-j.startMs)
	if ev.Labels != nil && j.requeued {
		// The jobs view keeps the latest labels: repeat the submit's.
		ev.Labels[LabelFirstSubmit] = time.UnixMilli(j.placeMs).UTC().Format(time.RFC3339Nano)
	}
	f.emit(ev)
	if reason != "" {
		xid := uint32(0)
		if status == schemas.StatusFailed && !j.lost {
			xid = j.xid
		}
		f.failures = append(f.failures, FailureTruth{Job: j.key, Status: status, ExitCode: code, Reason: reason,
			XID: xid, End: time.UnixMilli(f.nowMs).UTC()})
	}
	f.truncateJobTruth(j, f.nowMs)
	delete(f.runningJobs, j.key)
	f.tellEnded(j, status)

	if zombie >= 0 {
		first := j.slots[0]
		p := &first.slot().procs[zombie]
		life := hours(uniform(fate, 2, 16))
		if fate.Float64() < pLongZombie {
			life = hours(uniform(fate, 2*24, 7*24))
		}
		p.truth = f.addTruth(truthRec{
			kind: schemas.KindZombie, job: j.key, team: j.team, node: first.n.name,
			uuids: []string{first.slot().uuid}, pid: p.pid, startMs: f.nowMs, endMs: f.nowMs + life,
		}, nil)
		f.push(event{atMs: f.nowMs + life, kind: evProcEnd, n: first.n, pid: p.pid})
	}
	if status == schemas.StatusFailed && j.kind != kindNotebook && j.attempt < maxAttempts && fate.Float64() < pRerun {
		// Someone notices the failure and resubmits a few minutes later.
		f.push(event{atMs: f.nowMs + minutes(uniform(fate, 2, 30)), kind: evSubmit, j: j.rerun(fate)})
	}
}

// stray starts a process nobody can attribute (someone ran a script over ssh) on
// a free GPU, on a random node that has one: it holds memory and does nothing.
func (f *Fleet) stray() {
	first := f.ar.IntN(len(f.nodes))
	for k := range f.nodes {
		n := f.nodes[(first+k)%len(f.nodes)]
		if free := n.freeSlots(); free > 0 {
			n.stray(f, f.ar.IntN(free))
			return
		}
	}
}

// stray puts a stray process on the pick-th free slot of n.
func (n *Node) stray(f *Fleet, pick int) {
	for i := range n.slots {
		s := &n.slots[i]
		if !s.free() {
			continue
		}
		if pick > 0 {
			pick--
			continue
		}
		p := proc{
			pid: n.newPID(f.ar.Uint32()), name: []string{"python3", "python", "a.out"}[f.ar.IntN(3)],
			memMiB: uint32(uniform(f.ar, 400, float64(min(12000, s.fbTotalMiB*8/10)))),
		}
		life := hours(uniform(f.ar, 1, 12))
		p.truth = f.addTruth(truthRec{
			kind: schemas.KindZombie, node: n.name, uuids: []string{s.uuid}, pid: p.pid,
			startMs: f.nowMs, endMs: f.nowMs + life,
		}, nil)
		s.procs = append(s.procs, p)
		f.push(event{atMs: f.nowMs + life, kind: evProcEnd, n: n, pid: p.pid})
		return
	}
}

// removeProc ends process pid on n and returns it; false if it is not there
// (already killed).
func (n *Node) removeProc(pid uint32) (proc, bool) {
	for i := range n.slots {
		s := &n.slots[i]
		for k, p := range s.procs {
			if p.pid == pid {
				s.procs = slices.Delete(s.procs, k, k+1)
				return p, true
			}
		}
	}
	return proc{}, false
}

// leftover returns the process pid on n if it belongs to no running job (a
// zombie or a stray).
func (n *Node) leftover(pid uint32) (proc, bool) {
	for i := range n.slots {
		for _, p := range n.slots[i].procs {
			if p.pid == pid {
				return p, p.owner == nil || p.owner.state != stateRunning
			}
		}
	}
	return proc{}, false
}
