package collector

import (
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// jobTracker turns what attribution saw into job events: a start event the first
// time a job is seen on this node (and again when it is seen on more GPUs), an end
// event once none of its processes has been seen for endAfter. Schedulers that
// publish their own events (the simulator, gpupool's scheduler) do not need it; on
// a Kubernetes or Slurm node it is how a job's team, project and labels reach the
// jobs table. The jobs view merges events with min/max, so a restarted collector
// announcing a job again changes nothing.
type jobTracker struct {
	cluster, node string
	endAfter      time.Duration
	jobs          map[string]*trackedJob
}

type trackedJob struct {
	info      JobInfo
	firstMs   int64
	lastMs    int64
	gpus      []string // sorted
	announced int      // GPUs in the last start event
}

func newJobTracker(cluster, node string, endAfter time.Duration) *jobTracker {
	return &jobTracker{cluster: cluster, node: node, endAfter: endAfter, jobs: map[string]*trackedJob{}}
}

func (t *jobTracker) observe(info JobInfo, gpuUUID string, atMs int64) {
	if info.Job == "" {
		return
	}
	j, ok := t.jobs[info.Job]
	if !ok {
		j = &trackedJob{info: info, firstMs: atMs}
		t.jobs[info.Job] = j
	}
	j.lastMs = atMs
	if i, found := slices.BinarySearch(j.gpus, gpuUUID); !found {
		j.gpus = slices.Insert(j.gpus, i, gpuUUID)
	}
}

// events returns the start and end events due at atMs.
func (t *jobTracker) events(atMs int64) []schemas.JobEvent {
	var out []schemas.JobEvent
	for key, j := range t.jobs {
		if atMs-j.lastMs >= t.endAfter.Milliseconds() {
			out = append(out, schemas.JobEvent{
				TimeMs: j.lastMs, Job: key, Event: schemas.EventEnd, Cluster: t.cluster,
				Source: j.info.Source, Nodes: []string{t.node},
			})
			delete(t.jobs, key)
			continue
		}
		if len(j.gpus) > j.announced {
			start := j.info.StartMs
			if start == 0 || start > j.firstMs {
				start = j.firstMs
			}
			out = append(out, schemas.JobEvent{
				TimeMs: start, Job: key, Event: schemas.EventStart, Cluster: t.cluster,
				Team: j.info.Team, Project: j.info.Project, Queue: j.info.Queue, Pool: j.info.Pool,
				ModelName: j.info.ModelName, Workload: j.info.Workload, Source: j.info.Source,
				GPUs: uint32(len(j.gpus)), Nodes: []string{t.node}, GPUUUIDs: slices.Clone(j.gpus),
				Labels: j.info.Labels, Attempt: 1,
			})
			j.announced = len(j.gpus)
		}
	}
	slices.SortFunc(out, func(a, b schemas.JobEvent) int {
		if a.TimeMs != b.TimeMs {
			return int(a.TimeMs - b.TimeMs)
		}
		if a.Job < b.Job {
			return -1
		}
		return 1
	})
	return out
}
