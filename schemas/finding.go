package schemas

import "time"

// FindingState is where a finding version is in its episode's life.
type FindingState string

// States of a finding version.
const (
	// StateOpen is the first version of an episode.
	StateOpen FindingState = "open"
	// StateUpdated is a later version of an episode still seen.
	StateUpdated FindingState = "updated"
	// StateResolved is the last version: the problem was not seen for a while.
	StateResolved FindingState = "resolved"
)

// Severity orders findings for people and policies.
type Severity string

// Severities, lowest first.
const (
	// SeverityInfo is an optimisation hint (memory_bound, low_util, compute_bound).
	SeverityInfo Severity = "info"
	// SeverityWarning is waste someone should act on.
	SeverityWarning Severity = "warning"
	// SeverityCritical is waste past the analyzer's critical threshold.
	SeverityCritical Severity = "critical"
)

// Severities lists every severity, lowest first.
var Severities = []Severity{SeverityInfo, SeverityWarning, SeverityCritical}

// Rank orders severities: 1 for info, 2 for warning, 3 for critical, 0 for any
// other value.
func (s Severity) Rank() int {
	for i, x := range Severities {
		if x == s {
			return i + 1
		}
	}
	return 0
}

// Finding is one problem as the analyzer sees it at one pass: one version of a row
// of the findings table, the body of a message on gpupool.findings.<kind> and what
// the scheduler's policies act on.
type Finding struct {
	// ID is stable for the same problem: a hash of the kind and the job, and for a
	// zombie of the node, GPU, PID and job.
	ID    string
	Kind  FindingKind
	State FindingState
	// Episode counts the times the problem opened; with ID it names one
	// occurrence.
	Episode  uint32
	Severity Severity
	Cluster  string
	Node     string
	// Job is the job key; "" for a process no scheduler knows.
	Job     string
	Team    string
	Project string
	Pool    string
	// Card is the card type of the GPUs (a MIG instance's parent type).
	Card     string
	GPUUUIDs []string
	// PID is the process of a zombie; 0 for other kinds.
	PID uint32
	// Since is the estimated start of the condition, from which waste and policy
	// delays are counted.
	Since     time.Time
	FirstSeen time.Time
	LastSeen  time.Time
	// ResolvedAt is set on the resolved version.
	ResolvedAt time.Time
	// UpdatedAt is the pass that wrote this version.
	UpdatedAt time.Time
	// Evidence holds the figures that triggered the finding (ratios 0..1, MiB,
	// bytes/s, minutes, counts), always with window_minutes and samples.
	Evidence map[string]float64
	// WasteGPUHours is the GPU time wasted since Since (a MIG instance counts
	// slices / 7 of a GPU); WasteCost prices it in Currency.
	WasteGPUHours float64
	WasteCost     float64
	Currency      string
	// Recommended is the card type or MIG profile wrong_card recommends.
	Recommended string
	// Recommendation is what to do, in words.
	Recommendation string
	// Labels are the job's labels, which the scheduler looks opt-out labels up in;
	// the analyzer leaves them empty.
	Labels map[string]string
}

// Resolved reports whether f is the last version of its episode: a finding pushed
// to the scheduler resolved withdraws it.
func (f *Finding) Resolved() bool { return f.State == StateResolved }
