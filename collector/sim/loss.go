package sim

import (
	"math/rand/v2"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Node loss and preemption (Config.NodeLossPerNodeDay, Config.PreemptShare).
const (
	// lossStreamB seeds the stream that picks lost nodes and when (with the seed),
	// apart from arrivals, so the fleet's workload is the same with and without.
	lossStreamB = 0x6e6f6465
	// preemptStreamB seeds a job's preemption draws (with its salt).
	preemptStreamB = 0x7072656d
	// A lost node's scheduler gives up on it after a node timeout (Kubernetes'
	// eviction after the node goes NotReady, Slurm's SlurmdTimeout: minutes): its
	// jobs end failed 10–15 minutes after it went silent.
	lossNoticeMinMinutes, lossNoticeMaxMinutes = 10, 15
	// It comes back (rebooted, or repaired) 30–120 minutes after it was lost.
	lossDownMinMinutes, lossDownMaxMinutes = 30, 120
	// Labels the schedulers set on a job lost with its node.
	endReasonNodeFailSlurm = "NODE_FAIL"
	endReasonNodeLostK8s   = "NodeLost"
)

// NodeLoss is one node the simulator lost: from when its collector went silent
// to when it came back.
type NodeLoss struct {
	Cluster, Node string
	From, To      time.Time
}

// NodeLosses returns the nodes lost so far, in the order they were lost (To may
// be after the current time: still down).
func (f *Fleet) NodeLosses() []NodeLoss { return append([]NodeLoss(nil), f.losses...) }

// scheduleNodeLoss schedules the next node loss, fleet-wide.
func (f *Fleet) scheduleNodeLoss() {
	if f.cfg.NodeLossPerNodeDay <= 0 || len(f.nodes) == 0 {
		return
	}
	gapMs := float64(dayMs) / (f.cfg.NodeLossPerNodeDay * float64(len(f.nodes)))
	f.push(event{atMs: f.nowMsOrStart() + 1 + int64(f.lr.ExpFloat64()*gapMs), kind: evNodeLost, n: f.nodes[f.lr.IntN(len(f.nodes))]})
}

func (f *Fleet) nowMsOrStart() int64 { return max(f.nowMs, f.startMs) }

// loseNode takes n down now: its collector goes silent (Sample reports nothing),
// its leftover processes die with it, no job is placed on it until it comes back,
// and the jobs running on it fail once its scheduler notices.
func (f *Fleet) loseNode(n *Node) {
	if n.downUntilMs > f.nowMs {
		return // already down
	}
	downMs := minutes(uniform(f.lr, lossDownMinMinutes, lossDownMaxMinutes))
	noticeMs := minutes(uniform(f.lr, lossNoticeMinMinutes, lossNoticeMaxMinutes))
	n.downUntilMs = f.nowMs + downMs
	f.losses = append(f.losses, NodeLoss{Cluster: n.cluster, Node: n.name,
		From: time.UnixMilli(f.nowMs).UTC(), To: time.UnixMilli(n.downUntilMs).UTC()})
	seen := map[*job]bool{}
	for i := range n.slots {
		s := &n.slots[i]
		kept := s.procs[:0]
		for _, p := range s.procs {
			if p.owner != nil && p.owner.state == stateRunning {
				kept = append(kept, p)
				continue
			}
			f.endTruth(p.truth, f.nowMs) // a zombie or stray dies with the node
		}
		clear(s.procs[len(kept):])
		s.procs = kept
		s.xid, s.down = 0, true
		if j := s.job; j != nil && j.state == stateRunning && !seen[j] {
			seen[j] = true
			j.lost = true
			f.push(event{atMs: f.nowMs + noticeMs, kind: evStop, j: j, status: schemas.StatusFailed})
		}
	}
	f.push(event{atMs: n.downUntilMs, kind: evNodeBack, n: n})
}

// down reports whether n is lost at nowMs.
func (n *Node) down(nowMs int64) bool { return n.downUntilMs > nowMs }

// planPreemption draws, from j's own stream, whether higher-priority work
// preempts j (a batch job of a preemptible pool) during this attempt, and
// schedules it: stopped at a uniform point of its run and requeued, as a
// scheduler reclaiming its GPUs does (Requeue).
func (f *Fleet) planPreemption(j *job) {
	if f.cfg.PreemptShare <= 0 || j.kind == kindNotebook || (j.pool != poolTrainingExp && j.pool != poolInferenceBatch) {
		return
	}
	r := rand.New(rand.NewPCG(j.salt, preemptStreamB))
	if r.Float64() >= f.cfg.PreemptShare {
		return
	}
	at := j.startMs + int64(uniform(r, 0.1, 0.9)*float64(j.durMs))
	f.push(event{atMs: max(at, f.nowMs+1), kind: evStop, j: j, status: schemas.StatusPreempted, requeue: true})
}
