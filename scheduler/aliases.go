package scheduler

import "github.com/gpupool/gpupool/scheduler/engine"

// The admission engine and its model live in scheduler/engine; these names keep
// the scheduler's API as it was, so that its importers need not know.

// The engine and the model it is built from.
type (
	Engine        = engine.Engine
	Model         = engine.Model
	Card          = engine.Card
	Cluster       = engine.Cluster
	NodeGroup     = engine.NodeGroup
	Pool          = engine.Pool
	PriorityClass = engine.PriorityClass
	Queue         = engine.Queue
	Quota         = engine.Quota
)

// Jobs, what an admission pass decides about them, and the queues' status.
type (
	Job          = engine.Job
	JobSpec      = engine.JobSpec
	JobState     = engine.JobState
	JobFilter    = engine.JobFilter
	Decision     = engine.Decision
	DecisionKind = engine.DecisionKind
	QueueStatus  = engine.QueueStatus
	DefragPlan   = engine.DefragPlan
	DefragMove   = engine.Move
	CardUsage    = engine.CardUsage
)

// Job states (engine.JobState).
const (
	StateQueued     = engine.StateQueued
	StateAdmitted   = engine.StateAdmitted
	StateReclaiming = engine.StateReclaiming
	StateFinished   = engine.StateFinished
)

// Decision kinds (engine.DecisionKind).
const (
	DecisionAdmit   = engine.DecisionAdmit
	DecisionReclaim = engine.DecisionReclaim
	DecisionPreempt = engine.DecisionPreempt
	DecisionExpire  = engine.DecisionExpire
	DecisionRequeue = engine.DecisionRequeue
	DecisionStop    = engine.DecisionStop
	DecisionWait    = engine.DecisionWait
	DecisionSkip    = engine.DecisionSkip
)

// Pool names the default model uses (engine.DefaultModel).
const (
	PoolTrainingExp     = engine.PoolTrainingExp
	PoolTrainingProd    = engine.PoolTrainingProd
	PoolInferenceOnline = engine.PoolInferenceOnline
	PoolInferenceBatch  = engine.PoolInferenceBatch
	PoolDev             = engine.PoolDev
)

// The engine's errors, for errors.Is.
var (
	ErrUnknownQueue       = engine.ErrUnknownQueue
	ErrInvalidJob         = engine.ErrInvalidJob
	ErrOverQuota          = engine.ErrOverQuota
	ErrNotAllowed         = engine.ErrNotAllowed
	ErrUnknownJob         = engine.ErrUnknownJob
	ErrJobState           = engine.ErrJobState
	ErrPriorityNotAllowed = engine.ErrPriorityNotAllowed
)

// NewEngine builds an engine for a validated copy of m (engine.New).
func NewEngine(m Model) (*Engine, error) { return engine.New(m) }

// DefaultModel is the demo fleet's model (engine.DefaultModel).
func DefaultModel() Model { return engine.DefaultModel() }

// failedRounds is how many rounds of tries a stop, kill, resume or policy step
// gets when its executor keeps failing (engine.FailedRounds).
const failedRounds = engine.FailedRounds
