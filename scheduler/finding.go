package scheduler

import (
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Finding kinds policies act on, named as the analyzer names them.
const (
	FindingIdle        = "idle"
	FindingZombie      = "zombie"
	FindingMemoryBound = "memory_bound"
	FindingWrongCard   = "wrong_card"
	FindingLowUtil     = "low_util"
)

var findingKinds = []string{FindingIdle, FindingZombie, FindingMemoryBound, FindingWrongCard, FindingLowUtil}

// Severities, lowest first (the analyzer's).
var severities = []string{"info", "warning", "critical"}

func severityRank(s string) int {
	for i, x := range severities {
		if x == s {
			return i + 1
		}
	}
	return 0
}

// Finding is a problem the analyzer sees now, as policies need it. It is the
// scheduler's own input type, so that the analyzer (analyzer/findings), the store
// (findings_open) and tests can all feed it through a small adapter.
type Finding struct {
	// ID is stable for the same problem; with Episode it names one occurrence, and
	// each policy step acts on an occurrence once.
	ID      string `json:"id"`
	Episode uint32 `json:"episode,omitempty"`
	// Kind is idle, zombie, memory_bound, wrong_card or low_util.
	Kind     string `json:"kind"`
	Severity string `json:"severity,omitempty"`
	// Job is the job key; "" for a process no scheduler knows.
	Job     string `json:"job,omitempty"`
	Team    string `json:"team,omitempty"`
	Project string `json:"project,omitempty"`
	Pool    string `json:"pool,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Node    string `json:"node,omitempty"`
	// PID is the process of a zombie.
	PID      uint32   `json:"pid,omitempty"`
	GPUUUIDs []string `json:"gpu_uuids,omitempty"`
	Card     string   `json:"card,omitempty"`
	// Since is when the condition began (the analyzer's estimate); policy delays
	// count from it. FirstSeen stands in when it is zero.
	Since     time.Time `json:"since"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Labels are the job's labels (opt-out labels are looked up here).
	Labels map[string]string `json:"labels,omitempty"`
	// Recommendation is what to do, in words (wrong_card: the smaller card).
	Recommendation string `json:"recommendation,omitempty"`
	// Resolved, on a finding pushed to the scheduler, withdraws it.
	Resolved bool `json:"resolved,omitempty"`
}

// key names the finding's occurrence.
func (f *Finding) key() string { return f.ID + "#" + strconv.FormatUint(uint64(f.Episode), 10) }

// start is when policy delays begin.
func (f *Finding) start() time.Time {
	if !f.Since.IsZero() {
		return f.Since
	}
	return f.FirstSeen
}

// SourceOfJob guesses who runs a job from its key's prefix ("k8s/…" → kubernetes,
// "slurm/…", "proc/…" → process, "sched/…" → scheduler), for choosing an executor.
func SourceOfJob(key string) string {
	prefix, _, _ := strings.Cut(key, "/")
	switch prefix {
	case "k8s":
		return schemas.SourceKubernetes
	case "slurm":
		return schemas.SourceSlurm
	case "proc":
		return schemas.SourceProcess
	case "sched":
		return schemas.SourceScheduler
	}
	return ""
}
