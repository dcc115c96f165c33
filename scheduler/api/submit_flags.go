package api

import (
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// SubmitFlags are a job's fields as `gpupool submit` takes them (the struct
// tags are the command line's: flag names and help); Spec makes the JobSpec.
type SubmitFlags struct {
	Queue          string            `short:"q" required:"" help:"Queue to submit to (see gpupool queue ls)."`
	Team           string            `required:"" help:"Team the job is billed to."`
	Project        string            `help:"Project the job is billed to."`
	Name           string            `help:"A name for people."`
	GPUs           int               `name:"gpus" default:"1" help:"GPUs, all of one card type in one cluster."`
	Card           string            `help:"Card type, e.g. H100-80GB (default: any card with --min-memory-gib)."`
	MinMemoryGiB   int               `name:"min-memory-gib" help:"With no --card: any card with at least this much memory."`
	MIGProfile     string            `name:"mig-profile" help:"MIG instances of this profile, e.g. 1g.10gb: --gpus is then the number of instances."`
	GPUFraction    int               `name:"gpu-fraction" help:"A share of one GPU instead, in thousandths (1-999), shared as --sharing says."`
	Sharing        string            `help:"How a --gpu-fraction shares its GPU: timeslice or mps."`
	GPUMemoryMiB   int               `name:"gpu-memory-mib" help:"A --gpu-fraction's GPU memory limit (default: its share of the card's)."`
	Cluster        string            `help:"Pin the job to one cluster."`
	Clusters       []string          `sep:"," help:"Or the clusters it may run in, comma-separated (any: every one): it goes where it starts soonest."`
	Locality       map[string]string `help:"Data locality, key=value (repeatable), e.g. region=eu: only clusters labelled so."`
	Priority       string            `help:"Priority class (default: the queue's)."`
	NotPreemptible bool              `name:"not-preemptible" help:"Never stop the job to reclaim GPUs or for higher priority."`
	Checkpointable bool              `help:"The job checkpoints: give it its pool's grace before stopping it."`
	Workload       string            `help:"training, inference, batch-inference, dev or other."`
	ModelName      string            `name:"model-name" help:"The AI model the job trains or serves."`
	TimeLimit      time.Duration     `name:"time-limit" help:"Run time asked for (default: the pool's maximum)."`
	NotBefore      time.Time         `name:"not-before" help:"Hold the job until then (RFC 3339, e.g. 2026-12-24T22:00:00+01:00)."`
	Window         string            `help:"Start it only in this daily window, HH:MM-HH:MM (off-peak: 22:00-07:00)."`
	TimeZone       string            `name:"timezone" help:"Time zone of --window (IANA, e.g. Europe/Berlin; default UTC)."`
	Label          map[string]string `help:"Labels, key=value (repeatable), e.g. gpupool.io/no-reclaim=true."`
}

// Spec is the job the flags describe.
func (f *SubmitFlags) Spec() scheduler.JobSpec {
	spec := scheduler.JobSpec{
		Name: f.Name, Team: f.Team, Project: f.Project, Queue: f.Queue, GPUs: f.GPUs, Card: f.Card, MinMemoryGiB: f.MinMemoryGiB,
		MIGProfile: f.MIGProfile, GPUFraction: f.GPUFraction, Sharing: f.Sharing, GPUMemoryMiB: f.GPUMemoryMiB,
		Cluster: f.Cluster, Clusters: f.Clusters, Locality: f.Locality, PriorityClass: f.Priority, Checkpointable: f.Checkpointable,
		Workload: f.Workload, ModelName: f.ModelName, TimeLimitS: int64(f.TimeLimit / time.Second), Labels: f.Label,
		Window: f.Window, TimeZone: f.TimeZone,
	}
	if f.NotPreemptible {
		spec.Preemptible = new(bool) // false
	}
	if !f.NotBefore.IsZero() {
		nb := f.NotBefore
		spec.NotBefore = &nb
	}
	return spec
}
