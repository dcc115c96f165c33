package scheduler

import (
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// findingKey names a finding's occurrence: its ID and episode. Each policy step
// acts on an occurrence once.
func findingKey(f *schemas.Finding) string {
	return f.ID + "#" + strconv.FormatUint(uint64(f.Episode), 10)
}

// findingStart is when policy delays begin: the condition's estimated start, or the
// finding's first sighting when the analyzer gave none.
func findingStart(f *schemas.Finding) time.Time {
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
