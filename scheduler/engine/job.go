package engine

import (
	"strconv"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/placement"
)

// JobState is where a job is in the scheduler.
type JobState string

// Job states.
const (
	// StateQueued: waiting for admission (again, after a requeue).
	StateQueued JobState = "queued"
	// StateAdmitted: holding its GPUs.
	StateAdmitted JobState = "admitted"
	// StateReclaiming: admitted, but chosen to give its GPUs back; it keeps them
	// until its checkpoint grace ends and the executor has stopped it.
	StateReclaiming JobState = "reclaiming"
	// StateFinished: ended (succeeded, failed, cancelled) and gone from the queues.
	StateFinished JobState = "finished"
)

// JobSpec is what a submitter asks for.
type JobSpec struct {
	// Name is free text for people.
	Name    string `json:"name,omitempty"`
	Team    string `json:"team"`
	Project string `json:"project,omitempty"`
	Queue   string `json:"queue"`
	// GPUs is the number of GPUs, all of one card type in one cluster (with
	// MIGProfile: the number of MIG instances).
	GPUs int `json:"gpus"`
	// Card is the card type wanted; empty: any card with at least MinMemoryGiB
	// (with MIGProfile: any card the model has instances of that profile of).
	Card         string `json:"card,omitempty"`
	MinMemoryGiB int    `json:"min_memory_gib,omitempty"`
	// MIGProfile asks for GPUs MIG instances of this profile (e.g. "1g.10gb")
	// instead of whole GPUs; they count against the queue's quota of the MIG
	// resource "<card>/<profile>".
	MIGProfile string `json:"mig_profile,omitempty"`
	// GPUFraction asks for a share of one GPU instead, in thousandths (1–999;
	// gpus 1 or left out), under Sharing ("timeslice" or "mps"), with a GPU
	// memory limit of GPUMemoryMiB (0: the fraction's share of the card's
	// memory). It counts against the queue's quota of the fraction resource
	// "<card>/<mode>", in thousandths (model_fraction.go).
	GPUFraction  int    `json:"gpu_fraction,omitempty"`
	Sharing      string `json:"sharing,omitempty"`
	GPUMemoryMiB int    `json:"gpu_memory_mib,omitempty"`
	// GPUsPerNode, with a model that lists nodes, splits the gang into
	// GPUs/GPUsPerNode nodes of exactly that many GPUs each (GPUsPerNode =
	// GPUs: all on one node); 0: wherever they fit, one node first.
	GPUsPerNode int `json:"gpus_per_node,omitempty"`
	// Cluster pins the job to one cluster; empty: any.
	Cluster string `json:"cluster,omitempty"`
	// Clusters, instead of Cluster, are the clusters the job may run in
	// (["any"] or empty: every cluster); it is placed where it starts soonest,
	// among those that take its team (Cluster.Teams) and have its Locality.
	Clusters []string `json:"clusters,omitempty"`
	// Locality is the data-locality labels the job's cluster must carry (e.g.
	// {"region": "eu"}): it runs only where Cluster.Labels holds every pair.
	Locality map[string]string `json:"locality,omitempty"`
	// PriorityClass names the priority; empty: the queue's or the model's default.
	PriorityClass string `json:"priority_class,omitempty"`
	// Preemptible, unset, is true: the job may be stopped and requeued to give
	// borrowed GPUs back or make room for higher-priority work.
	Preemptible *bool `json:"preemptible,omitempty"`
	// Checkpointable jobs get their pool's reclaim grace to checkpoint before they
	// are stopped.
	Checkpointable bool `json:"checkpointable,omitempty"`
	// Workload is training, inference, batch-inference, dev or other.
	Workload  string `json:"workload,omitempty"`
	ModelName string `json:"model_name,omitempty"`
	// TimeLimitS is the run time the job asks for, in seconds; 0: the pool's
	// maximum job duration.
	TimeLimitS int64             `json:"time_limit_s,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	// NotBefore, when set, holds the job until then.
	NotBefore *time.Time `json:"not_before,omitempty"`
	// Window, "HH:MM-HH:MM" in TimeZone (an IANA name; empty: UTC), lets the job
	// start only in that daily window (off-peak hours: "22:00-07:00"). A job that
	// started runs on past the window's end; its time limit bounds it.
	Window   string `json:"window,omitempty"`
	TimeZone string `json:"time_zone,omitempty"`
}

// unit is what GPUs counts, in words.
func (s *JobSpec) unit() string {
	if s.MIGProfile != "" {
		return "MIG instances of " + s.MIGProfile
	}
	if s.GPUFraction > 0 {
		return "thousandths of a GPU, " + s.Sharing + " shared"
	}
	return "GPUs"
}

// preemptible reports the effective flag.
func (s *JobSpec) preemptible() bool { return s.Preemptible == nil || *s.Preemptible }

// Job is a job as the scheduler keeps it: its request, where it is, and its
// history across attempts.
type Job struct {
	// ID names the job across attempts ("sched/<team>/<n>"); each attempt's job
	// key (for job events) is AttemptKey.
	ID   string  `json:"id"`
	Spec JobSpec `json:"spec"`
	Pool string  `json:"pool"`
	// Priority is the value of the job's priority class.
	Priority int      `json:"priority"`
	State    JobState `json:"state"`
	// Attempt is 1 for the first run and grows with each requeue.
	Attempt int `json:"attempt"`
	// Seq is the job's place in line: submission order, kept across requeues.
	Seq uint64 `json:"seq"`
	// SubmitTime is the first submission, kept across requeues; QueuedAt is when
	// the current attempt joined the queue.
	SubmitTime time.Time `json:"submit_time"`
	QueuedAt   time.Time `json:"queued_at"`
	AdmitTime  time.Time `json:"admit_time,omitzero"`
	// Card and Cluster are where the current attempt was admitted (the card
	// type, also for a job of MIG instances).
	Card    string `json:"card,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	// PlacementReason says where the job went (or is reserved) and why, and
	// which clusters it names refuse it: "placed in eu-west-b: fits now (the
	// fullest with room of …); us-east-a refuses team vision (open to nlp)".
	PlacementReason string `json:"placement_reason,omitempty"`
	// Borrowed is how many of its GPUs were beyond its queue's nominal quota when
	// it was admitted.
	Borrowed int `json:"borrowed,omitempty"`
	// ReclaimBy is when a reclaiming job's grace ends; ReclaimReason says why it
	// is being reclaimed.
	ReclaimBy     time.Time `json:"reclaim_by,omitzero"`
	ReclaimReason string    `json:"reclaim_reason,omitempty"`
	// Held: a dev job a policy reclaimed (idle) waits in its queue, not admitted,
	// until its owner resumes it (Service.Resume, POST /v1/resume/{id}, gpupool
	// jobs resume): requeued at once it would take the GPUs it was reclaimed from
	// straight back, ahead of the jobs waiting, to idle again while its owner is
	// away. A hung job a policy suspended is held the same way: run again at once,
	// a deadlock usually comes back.
	Held bool `json:"held,omitempty"`
	// External is the job outside the scheduler (a Kubernetes Job or Kueue
	// Workload, a Slurm job) that this one stands for: a policy reclaimed it and
	// its executor suspended it, and the scheduler queued it here to reactivate it
	// when its queue has room (Service readmit). Its executor is asked each pass
	// whether it still runs; nil for the scheduler's own jobs.
	External *executor.Target `json:"external,omitempty"`
	// Resubmits: the external job waited suspended in its own system for the
	// scheduler to admit it (Service.SubmitSuspended), and that system submits
	// its next attempt itself, so a stop ends this job rather than requeueing it.
	Resubmits bool `json:"resubmits,omitempty"`
	// WaitReason says why a queued job is not admitted yet.
	WaitReason string    `json:"wait_reason,omitempty"`
	EndTime    time.Time `json:"end_time,omitzero"`
	// Status is how a finished job ended: succeeded, failed or cancelled.
	Status string `json:"status,omitempty"`
	// Placement is the nodes and GPU indices (or MIG instances) the current
	// attempt holds (a model with nodes); ExpectedStart is when a queued job is expected to fit (its
	// reservation's start, when it has one; zero: unknown).
	Placement     []placement.NodeAlloc `json:"placement,omitempty"`
	ExpectedStart time.Time             `json:"expected_start,omitzero"`
	// Reserved is the nodes and GPUs a queued job's reservation holds for it
	// from ExpectedStart (backfill: jobs that would run past then are kept off
	// them); nil when it has none.
	Reserved []placement.NodeAlloc `json:"reserved,omitempty"`
	// QueueWaitS is the total time, in seconds, the job's attempts have waited.
	QueueWaitS float64 `json:"queue_wait_s"`

	q *queueState
	// req is the job's placement request compiled against the nodes, with the
	// owed card and the cards it was compiled with.
	req      placement.Compiled
	reqOwed  int
	reqCards []int
	// resv is the reservation the last pass made for it (nil: none): it holds
	// in the next pass until the job's turn (placement.Pending.Prior).
	resv *placement.Reservation
	// cards are the card types the job may run on, cheapest first.
	cards []int
	// allowed are the clusters (by index, with their names) the job may run
	// in, nil: every one; excluded says why each cluster it names but may
	// not use is left out (resolveClusters).
	allowed      []int
	allowedNames []string
	excluded     []string
	// window is when the job may start (Spec.NotBefore, Window, TimeZone).
	window startWindow
	// waitBlock is WaitReason before it is put in words.
	waitBlock block
	// reclaimFor is the job a reclaiming job makes room for; pendingVictims counts
	// the reclaiming jobs a queued job waits for.
	reclaimFor     *Job
	pendingVictims int
	// owed is 1 + the card running jobs were last ordered stopped on to make room
	// for this queued one (0: none); it is tried first.
	owed int
	// confirmed: the executor stopped this reclaiming job (it is released once its
	// grace is over); noRequeue: the stop ends the job for good (past its time
	// limit, a cancel policy); expirySkipped: a protected job past its time limit
	// was reported once.
	confirmed, noRequeue, expirySkipped bool
	// stopFailures counts the failed stops of this attempt; noStop: its executor
	// refused a stop or kept failing, so it is never ordered stopped again;
	// stopRetryAt: not before then after a failure.
	stopFailures int
	noStop       bool
	stopRetryAt  time.Time
	// suspension is set while an executor holds the stopped job, to be resumed
	// when it is admitted again.
	suspension *Suspension
}

// AttemptKey is the job key of the current attempt: the ID for the first, then
// ID/2, ID/3, …
func (j *Job) AttemptKey() string { return attemptKey(j.ID, j.Attempt) }

func attemptKey(id string, attempt int) string {
	if attempt <= 1 {
		return id
	}
	return id + "/" + strconv.Itoa(attempt)
}

// reclaimGrace is how long the job may take to checkpoint before it is stopped:
// its pool's reclaim grace if it is checkpointable, else nothing.
func (j *Job) reclaimGrace() time.Duration {
	if !j.Spec.Checkpointable || j.q == nil {
		return 0
	}
	return j.q.pool.ReclaimGrace
}

// Running reports whether the job holds GPUs.
func (j *Job) Running() bool { return j.State == StateAdmitted || j.State == StateReclaiming }

// before orders pending jobs within a queue: higher priority first, then place in
// line.
func (j *Job) before(o *Job) bool {
	if j.Priority != o.Priority {
		return j.Priority > o.Priority
	}
	return j.Seq < o.Seq
}
