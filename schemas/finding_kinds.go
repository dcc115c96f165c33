package schemas

import "slices"

// FindingKind is what a finding says is wrong.
type FindingKind string

// Finding kinds: the analyzer's detectors, the scheduler's policies, the alerts and
// the simulator's ground truth all name them so. Each has a descriptor in
// kindInfos below; adding a kind adds its constant and its descriptor here, and
// its detector to the analyzer's table (analyzer/findings/kinds.go).
const (
	// KindIdle: a job holds GPUs whose engines are inactive.
	KindIdle FindingKind = "idle"
	// KindZombie: a process holds GPU memory with no activity after its job ended,
	// or with no job at all.
	KindZombie FindingKind = "zombie"
	// KindHung: every GPU of a job dropped at once from the job's own earlier
	// profile to a hang: engines spinning with no data moving (a collective that
	// deadlocked) or, on a multi-GPU job, nothing at all with memory held (a
	// host-side hang).
	KindHung FindingKind = "hung"
	// KindMemoryBound: DRAM busy while SM and tensor pipes are mostly unused.
	KindMemoryBound FindingKind = "memory_bound"
	// KindMemoryCapacity: a job holds most of its GPUs' memory while its compute
	// stays low and it keeps serving (memory-capacity-bound, over-provisioned):
	// distinct from memory_bound, which is DRAM bandwidth.
	KindMemoryCapacity FindingKind = "memory_capacity"
	// KindWrongCard: a job uses a fraction of a bigger card than it needs (peak
	// memory and a high percentile of its SM activity, however often it is busy).
	KindWrongCard FindingKind = "wrong_card"
	// KindLowUtil: a long job whose SM activity stays low, though it is never idle.
	KindLowUtil FindingKind = "low_util"
	// KindComputeBound: SM and tensor pipes busy while DRAM is not: the card's
	// compute is what limits the job (a hint, no waste).
	KindComputeBound FindingKind = "compute_bound"
	// KindFragmentation: in one cluster and card type, free GPUs that no
	// waiting job's shape can use while jobs wait (ByScheduler).
	KindFragmentation FindingKind = "fragmentation"
)

// KindInfo is one finding kind's descriptor: the facts about it that more than
// one package reads (the analyzer, the scheduler's policies, the alerts, the
// reports). Packages read these fields rather than switch on the kind.
type KindInfo struct {
	Kind FindingKind
	// Title names the problem for people: an alert's header.
	Title string
	// Description says what the finding means, in a sentence.
	Description string
	// Advice marks right-sizing, sharing or tuning advice to a working job rather
	// than reclaimable waste: its detector runs at the analyzer's hint interval,
	// and a job with a finding of an ExplainsAdvice kind receives none.
	Advice bool
	// Severity, when set, is the severity of every finding of the kind (a hint
	// with no waste); when empty, the severity follows the waste: warning, and
	// critical past the analyzer's critical threshold.
	Severity Severity
	// PerProcess marks a finding about one process (node, GPU, PID) rather than a
	// job: its Job may be "" (a process no scheduler knows, or one that outlived
	// its job), its identity includes the node and PID, and it is the only kind a
	// policy may kill.
	PerProcess bool
	// NoStop, when set, says why no policy may stop the job for it (reclaim,
	// cancel): such a job is working, and a policy may only recommend or notify.
	NoStop string
	// HoldOnReclaim marks a kind whose job, reclaimed, is requeued held until its
	// owner has looked (run again at once, the problem usually comes back).
	HoldOnReclaim bool
	// AlertByDefault marks a kind the Slack alerts send unless configured
	// otherwise.
	AlertByDefault bool
	// ExplainsAdvice marks a kind that explains away every Advice kind on the
	// same job (seen in the pass or open): a stuck or idle job is told nothing
	// about its size or sharing.
	ExplainsAdvice bool
	// Explains are the other findings a finding of this kind on the same job
	// explains away (docs/analyzer.md, "Precedence").
	Explains []Explained
	// ByScheduler marks a kind the scheduler finds itself, from where jobs run
	// and what waits (a cluster's capacity, not a job): it is not one of
	// FindingKinds, the analyzer's kinds, no finding of it is accepted from
	// outside, and a policy on it has one step, recommend or reclaim (carry
	// out the moves the finding names).
	ByScheduler bool
}

// Explained is a kind a finding explains away, on the same job and period.
type Explained struct {
	Kind FindingKind
	// Reason, when set, narrows it to the detections with this reason (the
	// evidence's reason: for a zombie, ReasonInactive); empty: all of them.
	Reason string
}

// ReasonInactive is the reason of a zombie that is a running job's process
// inactive for long: that job's idleness or hang counted again.
const ReasonInactive = "inactive"

// kindInfos are the descriptors, in the order the analyzer runs their
// detectors (FindingKinds).
var kindInfos = []KindInfo{
	{
		Kind: KindIdle, Title: "Idle GPUs",
		Description:    "A running job holds GPUs whose engines stay inactive.",
		AlertByDefault: true, ExplainsAdvice: true,
		Explains: []Explained{{Kind: KindZombie, Reason: ReasonInactive}},
	},
	{
		Kind: KindZombie, Title: "Zombie process holding GPU memory",
		Description: "A process holds GPU memory with no activity after its job ended, or with no job at all.",
		PerProcess:  true, AlertByDefault: true,
	},
	{
		Kind: KindHung, Title: "Hung job (GPUs spinning or stalled, memory held)",
		Description:   "Every GPU of a job dropped at once from its own earlier profile to a hang: engines spinning with no data moving, or nothing at all with memory held.",
		HoldOnReclaim: true, ExplainsAdvice: true,
		Explains: []Explained{{Kind: KindIdle}, {Kind: KindZombie, Reason: ReasonInactive}},
	},
	{
		Kind: KindMemoryBound, Title: "Memory-bound job",
		Description: "DRAM busy while the SM and tensor pipes are mostly unused: the job waits on memory bandwidth.",
		Advice:      true, Severity: SeverityInfo,
		Explains: []Explained{{Kind: KindLowUtil}},
	},
	{
		Kind: KindMemoryCapacity, Title: "Job holding a GPU's memory with little compute",
		Description: "A job holds most of its GPUs' memory while its compute stays low and it keeps serving: over-provisioned, a smaller unit would do.",
		Advice:      true, NoStop: "a memory_capacity job is working (over-provisioned, not idle)",
		Explains: []Explained{{Kind: KindLowUtil}},
	},
	{
		Kind: KindWrongCard, Title: "Job on a bigger card than it needs",
		Description: "A job uses a fraction of a bigger card than it needs (peak memory and a high percentile of its SM activity).",
		Advice:      true, AlertByDefault: true,
		Explains: []Explained{{Kind: KindLowUtil}},
	},
	{
		Kind: KindLowUtil, Title: "Low GPU utilisation",
		Description: "A long job whose SM activity stays low, though it is never idle.",
		Advice:      true, Severity: SeverityInfo,
	},
	{
		Kind: KindComputeBound, Title: "Compute-bound job",
		Description: "SM and tensor pipes busy while DRAM is not: the card's compute limits the job (a hint, no waste).",
		Advice:      true, Severity: SeverityInfo,
	},
	{
		Kind: KindFragmentation, Title: "Fragmented GPUs: free, but no waiting job's shape fits",
		Description: "In one cluster and card type, free GPUs spread over nodes so that no waiting gang fits while jobs wait; the finding names the checkpointable jobs to move so that a gang starts.",
		ByScheduler: true,
	},
}

// FindingKinds lists the analyzer's kinds (every kind but those ByScheduler),
// in the order the analyzer runs their detectors.
var FindingKinds = kindsOf(kindInfos, false)

// PolicyKinds lists every kind a scheduler policy may act on: FindingKinds,
// then the scheduler's own.
var PolicyKinds = append(kindsOf(kindInfos, false), kindsOf(kindInfos, true)...)

func kindsOf(infos []KindInfo, byScheduler bool) []FindingKind {
	var out []FindingKind
	for _, d := range infos {
		if d.ByScheduler == byScheduler {
			out = append(out, d.Kind)
		}
	}
	return out
}

// KindInfos returns a copy of every kind's descriptor, in PolicyKinds order.
func KindInfos() []KindInfo { return slices.Clone(kindInfos) }

// Info returns k's descriptor; for a kind not in PolicyKinds, one with only Kind
// set.
func (k FindingKind) Info() KindInfo {
	for _, d := range kindInfos {
		if d.Kind == k {
			return d
		}
	}
	return KindInfo{Kind: k}
}

// Known reports whether k is one of FindingKinds.
func (k FindingKind) Known() bool { return slices.Contains(FindingKinds, k) }

// PerProcessKinds lists the kinds whose findings name a process (PerProcess).
func PerProcessKinds() []FindingKind {
	var out []FindingKind
	for _, d := range kindInfos {
		if d.PerProcess {
			out = append(out, d.Kind)
		}
	}
	return out
}
