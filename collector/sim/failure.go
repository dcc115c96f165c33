package sim

import (
	"math/rand/v2"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// LabelEndReason is the end-event label with the scheduler's word for why an
// attempt ended (schemas.LabelEndReason).
const LabelEndReason = schemas.LabelEndReason

// Failure reasons, the taxonomy of the job_failures view (migration 0008): the
// simulator's ground truth names them so.
const (
	ReasonPreempted = "preempted"  // the scheduler preempted or reclaimed it
	ReasonNodeLost  = "node_lost"  // its node's collector went silent before it ended
	ReasonGPUECC    = "gpu_ecc"    // an ECC XID (48, 63, 64, 92, 94, 95) on its GPUs
	ReasonGPUXID    = "gpu_xid"    // another XID on its GPUs
	ReasonOOMKilled = "oom_killed" // killed (137) by the kernel's or the kubelet's OOM killer
	ReasonTimeLimit = "time_limit" // stopped at its time limit
	ReasonKilled    = "killed"     // SIGKILL (137) with no OOM evidence
	ReasonCrashed   = "crashed"    // another signal: SIGABRT (134), SIGSEGV (139), …
	ReasonUserError = "user_error" // a non-zero exit code below 128: the program gave up
	ReasonCancelled = "cancelled"  // its owner cancelled it
)

// FailureTruth is why one attempt that did not succeed ended, as the simulator
// made it end.
type FailureTruth struct {
	Job      string
	Status   string
	ExitCode int32
	Reason   string
	// XID is the XID its first GPU logged, 0 if none.
	XID uint32
	End time.Time
}

// Failures returns the reason of every attempt that has ended other than
// succeeded, in the order they ended.
func (f *Fleet) Failures() []FailureTruth { return append([]FailureTruth(nil), f.failures...) }

// eccXIDs are the XIDs that report ECC errors (double-bit errors, page
// retirement, row remapping, contained and uncontained ECC errors).
var eccXIDs = map[uint32]bool{48: true, 63: true, 64: true, 92: true, 94: true, 95: true}

// programXIDs are the XIDs NVIDIA's catalogue names as usually the program's
// doing (13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped
// processing): an attempt that logged one failed for the reason its exit code
// gives, as job_failures says since migration 0017.
var programXIDs = map[uint32]bool{13: true, 31: true, 43: true}

// exitReason is the reason an exit code gives with no other evidence.
func exitReason(code int32) string {
	switch {
	case code == 137:
		return ReasonKilled
	case code > 128 && code < 160:
		return ReasonCrashed
	}
	return ReasonUserError
}

// failureMix is how the failures with no XID end, after the studies of shared
// GPU clusters (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters
// for DNN Training Workloads", ATC '19; Weng et al., "MLaaS in the Wild", NSDI '22):
// most are the program's own errors, then running out of memory, then crashes
// and time limits. Drawn from the job's own stream (see endReason), so that the
// fleet's other draws are unchanged.
var failureMix = []struct {
	reason string
	share  float64
	exit   int32
}{
	{ReasonUserError, 0.50, 1},
	{ReasonOOMKilled, 0.20, 137},
	{ReasonCrashed, 0.12, 139},
	{ReasonTimeLimit, 0.10, 143},
	{ReasonKilled, 0.04, 137},
	{ReasonCrashed, 0.04, 134},
}

// failureStreamB seeds the failure stream (with the job's salt).
const failureStreamB = 0x6661696c

// endReason decides why j, ending now with status and exitCode, ended: the
// reason, the exit code the scheduler reports and the end label it sets.
func endReason(j *job, status string, exitCode int32) (reason string, code int32, label string) {
	switch {
	case j.lost && j.source == schemas.SourceSlurm:
		return ReasonNodeLost, 0, endReasonNodeFailSlurm
	case j.lost && j.source == schemas.SourceKubernetes:
		return ReasonNodeLost, 0, endReasonNodeLostK8s
	case j.lost:
		return ReasonNodeLost, 0, ""
	case status == schemas.StatusPreempted:
		return ReasonPreempted, exitCode, ""
	case status == schemas.StatusCancelled:
		return ReasonCancelled, exitCode, ""
	case status != schemas.StatusFailed:
		return "", exitCode, ""
	case j.xid != 0 && eccXIDs[j.xid]:
		return ReasonGPUECC, exitCode, ""
	case j.xid != 0 && programXIDs[j.xid]:
		return exitReason(exitCode), exitCode, ""
	case j.xid != 0:
		return ReasonGPUXID, exitCode, ""
	}
	x := rand.New(rand.NewPCG(j.salt, failureStreamB)).Float64()
	m := failureMix[len(failureMix)-1]
	for _, c := range failureMix {
		if x < c.share {
			m = c
			break
		}
		x -= c.share
	}
	slurm := j.source == schemas.SourceSlurm
	switch {
	case j.source == schemas.SourceProcess && m.reason == ReasonOOMKilled:
		// No scheduler reports why a bare process died: only the SIGKILL shows.
		return ReasonKilled, m.exit, ""
	case j.source == schemas.SourceProcess && m.reason == ReasonTimeLimit:
		return ReasonUserError, 1, ""
	case m.reason == ReasonOOMKilled && slurm:
		return m.reason, m.exit, "OUT_OF_MEMORY"
	case m.reason == ReasonOOMKilled:
		return m.reason, m.exit, "OOMKilled"
	case m.reason == ReasonTimeLimit && slurm:
		return m.reason, m.exit, "TIMEOUT"
	case m.reason == ReasonTimeLimit:
		return m.reason, m.exit, "DeadlineExceeded"
	}
	return m.reason, m.exit, ""
}
