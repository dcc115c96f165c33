// Package executor defines how the scheduler's decisions reach the systems that run
// jobs: one small interface, with an implementation per system in the subpackages
// (sim: the simulated fleet; agent: the collector's node agent for bare-metal
// processes; kubernetes; slurm).
package executor

import (
	"context"
	"errors"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Target names a job — and, for a process action, one of its processes — in the
// terms the executor's system understands.
type Target struct {
	// Job is gpupool's job key ("k8s/<ns>/<pod uid>", "slurm/<cluster>/<id>", …).
	Job string
	// Source is who runs the job: kubernetes, slurm, process or scheduler.
	Source  string
	Cluster string
	// Card is the card type the scheduler admitted the job on (Resume of a job
	// that waited suspended for admission: its system places it on that card).
	Card string
	Node string
	// PID is the process to act on (Kill), on Node.
	PID uint32
	// Pool is the pool the scheduler resolved for the job (its own records or an
	// executor's answer, never a finding's claim); the node agent refuses a kill
	// in a pool it protects or that attribution on the node contradicts.
	Pool string
	// Kubernetes: the pod and its owning Job / Kueue Workload, when known.
	Namespace     string
	Pod           string
	K8sJob        string
	KueueWorkload string
	// SlurmJobID is Slurm's job ID.
	SlurmJobID string
	// Labels are the job's labels (e.g. Kubernetes pod labels).
	Labels map[string]string
	// Finding is the kind of finding a policy acts on; empty for the
	// scheduler's own stops (borrowed GPUs taken back, a withdrawn job). The
	// notice its owner gets names it.
	Finding schemas.FindingKind
	// Placement is where the scheduler placed the job's current attempt (a
	// model that lists nodes; nil otherwise): each node with the GPU indices,
	// or MIG instances, it holds there. Resume runs the job there (Kubernetes:
	// node affinity on the Job's pods; Slurm: the pending job's required node
	// list; the simulated fleet: those GPU slots).
	Placement []NodeGPUs
}

// NodeGPUs is one node of a job's placement.
type NodeGPUs struct {
	Node string
	// GPUs are the GPU indices on the node given whole.
	GPUs []int `json:",omitempty"`
	// MIG are the MIG instances given on the node.
	MIG []MIGSlice `json:",omitempty"`
	// Shares are shares of a GPU given on the node (a fraction's placement
	// holds one).
	Shares []GPUShare `json:",omitempty"`
}

// GPUShare is a share of one GPU: its index, the fraction in thousandths, the
// sharing mode ("timeslice" or "mps") and the GPU memory limit in MiB.
type GPUShare struct {
	GPU      int
	Fraction int
	Mode     string
	MemMiB   int
}

// Share is the placement's share of a GPU, if it holds one.
func (t Target) Share() (GPUShare, bool) {
	for _, n := range t.Placement {
		if len(n.Shares) > 0 {
			return n.Shares[0], true
		}
	}
	return GPUShare{}, false
}

// MIGSlice is one MIG instance: the GPU it is on, its index in that GPU's
// layout and its profile ("1g.10gb").
type MIGSlice struct {
	GPU     int
	Index   int
	Profile string
}

// Nodes is the names of the placement's nodes, in its order.
func (t Target) Nodes() []string {
	if len(t.Placement) == 0 {
		return nil
	}
	out := make([]string, len(t.Placement))
	for i, n := range t.Placement {
		out[i] = n.Node
	}
	return out
}

// Outcome says what an executor did.
type Outcome struct {
	// Done is true when the action took effect (the GPUs are free, the process is
	// gone); false with a nil error means it was already so.
	Done bool
	// Detail is a human-readable account, e.g. "Job suspended", "scontrol requeue 42".
	Detail string
}

// Executor carries out actions on one kind of system. Implementations are safe for
// concurrent use, and each call is idempotent: acting on a job already stopped, or a
// process already gone, succeeds with Done false.
type Executor interface {
	// Name names the executor ("sim", "agent", "kubernetes", "slurm").
	Name() string
	// Stop frees the job's GPUs. requeue keeps the job to run again later (a
	// suspended Kubernetes Job, a Slurm requeue); otherwise it is cancelled. grace
	// is how long the job may take to checkpoint and exit before it is forced.
	Stop(ctx context.Context, t Target, requeue bool, grace time.Duration) (Outcome, error)
	// Resume lets a requeued job run again (unsuspend, release a hold).
	Resume(ctx context.Context, t Target) (Outcome, error)
	// Kill ends one process (t.PID on t.Node): a zombie holding GPU memory.
	Kill(ctx context.Context, t Target, grace time.Duration) (Outcome, error)
}

// Checker is an executor that can say whether a job is still where it runs. The
// scheduler asks it, after a restart, about each job its state file had running:
// one that ended while the scheduler was down gives its GPUs back.
type Checker interface {
	// Check reports whether the job still runs, or waits to run again, in the
	// executor's system. A job the system no longer knows is Gone with a nil error.
	Check(ctx context.Context, t Target) (Presence, error)
}

// Presence is what Check found.
type Presence struct {
	// Gone: the job ended (completed, failed, deleted) or its system no longer
	// knows it.
	Gone bool
	// Detail is a human-readable account, e.g. "Job ns/train finished".
	Detail string
}

// ErrUnsupported means the executor cannot perform the action for this target (a
// Slurm executor asked to act on a Kubernetes pod, a kill without a PID).
var ErrUnsupported = errors.New("executor: action not supported for this target")

// ErrNotFound means the target no longer exists in the executor's system.
var ErrNotFound = errors.New("executor: target not found")
