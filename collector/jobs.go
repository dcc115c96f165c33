package collector

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strconv"
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
//
// It also gathers what the node sees of how a job ends, for job_failures: the
// OOM kills its cgroup counts, the ECC errors its GPUs count while it holds them,
// the kubelet's end reason; and its output counter's total, for job_output. They
// go on its end event as labels (and the output total, while it runs, on a
// repeated start event every output.report_every).
type jobTracker struct {
	cluster, node string
	endAfter      time.Duration
	jobs          map[string]*trackedJob

	cgroupRoot  string
	endReasoner EndReasoner
	output      *outputScraper
	reportEvery time.Duration
	log         *slog.Logger
	metrics     *Metrics
	ecc         map[string]eccCounters // GPU UUID → its counters at the last tick
}

type trackedJob struct {
	info      JobInfo
	firstMs   int64
	lastMs    int64
	gpus      []string // sorted
	announced int      // GPUs in the last start event

	oomKills       uint64
	cgroupWarned   bool
	eccUncorrected uint64
	eccCorrected   uint64
	reportedMs     int64
	reported       float64
}

type eccCounters struct{ corrected, uncorrected uint64 }

func newJobTracker(cluster, node string, endAfter time.Duration) *jobTracker {
	return &jobTracker{
		cluster: cluster, node: node, endAfter: endAfter, jobs: map[string]*trackedJob{},
		ecc: map[string]eccCounters{}, log: slog.New(slog.DiscardHandler), metrics: NewMetrics(nil),
	}
}

func (t *jobTracker) observe(info JobInfo, gpuUUID string, atMs int64) {
	if info.Job == "" {
		return
	}
	j, ok := t.jobs[info.Job]
	if !ok {
		j = &trackedJob{info: info, firstMs: atMs}
		t.jobs[info.Job] = j
		if t.output != nil && !info.Output.IsZero() {
			t.output.watch(info.Job, info.Output)
		}
	}
	j.lastMs = atMs
	if i, found := slices.BinarySearch(j.gpus, gpuUUID); !found {
		j.gpus = slices.Insert(j.gpus, i, gpuUUID)
	}
}

// eccStep returns a counter's increase from prev to now and the value to keep.
// A 0 after a count is a reading the source could not make (it reports 0 then),
// not a reset: the count is kept, so that the next reading adds nothing false. A
// smaller non-zero count means the driver reloaded; it becomes the new base.
func eccStep(prev, now uint64) (inc, keep uint64) {
	switch {
	case now >= prev:
		return now - prev, now
	case now == 0:
		return 0, prev
	}
	return 0, now
}

// observeGPUs adds the tick's ECC error increases on each GPU to the jobs that
// hold it; what a GPU counted before it was first seen is no job's.
func (t *jobTracker) observeGPUs(gpus []schemas.GPUSample) {
	for i := range gpus {
		g := &gpus[i]
		prev, seen := t.ecc[g.GPUUUID]
		if !seen {
			t.ecc[g.GPUUUID] = eccCounters{g.ECCCorrectedVolatile, g.ECCUncorrectedVolatile}
			continue
		}
		var now eccCounters
		dc, keepC := eccStep(prev.corrected, g.ECCCorrectedVolatile)
		du, keepU := eccStep(prev.uncorrected, g.ECCUncorrectedVolatile)
		now.corrected, now.uncorrected = keepC, keepU
		t.ecc[g.GPUUUID] = now
		if dc == 0 && du == 0 {
			continue
		}
		for _, j := range t.jobs {
			if _, held := slices.BinarySearch(j.gpus, g.GPUUUID); held {
				j.eccCorrected += dc
				j.eccUncorrected += du
			}
		}
	}
}

// readCgroups reads the OOM kills of every tracked job with a cgroup of its own.
// The count only grows while the cgroup lives, so the largest seen is kept: the
// cgroup is usually gone by the time the job's end is noticed.
func (t *jobTracker) readCgroups() {
	if t.cgroupRoot == "" {
		return
	}
	for key, j := range t.jobs {
		if j.info.Cgroup == "" {
			continue
		}
		ev, err := readMemoryEvents(t.cgroupRoot, j.info.Cgroup)
		switch {
		case err == nil:
			j.oomKills = max(j.oomKills, ev.OOMKill)
		case isGone(err):
		default:
			t.metrics.cgroupErrors.Inc()
			if !j.cgroupWarned {
				j.cgroupWarned = true
				t.log.Warn("cannot read the job's cgroup memory.events; its OOM kills are unknown", "job", key, "err", err)
			}
		}
	}
}

// labels are the job's own labels with what the node saw of it: OOM kills, ECC
// errors, the end reason and the output so far. Nil when there are none.
func (t *jobTracker) labels(key string, j *trackedJob, endReason string) (map[string]string, float64, bool) {
	out := maps.Clone(j.info.Labels)
	set := func(k, v string) {
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	if j.oomKills > 0 {
		set(schemas.LabelOOMKills, strconv.FormatUint(j.oomKills, 10))
	}
	if j.eccUncorrected > 0 {
		set(schemas.LabelECCUncorrected, strconv.FormatUint(j.eccUncorrected, 10))
	}
	if j.eccCorrected > 0 {
		set(schemas.LabelECCCorrected, strconv.FormatUint(j.eccCorrected, 10))
	}
	if endReason != "" {
		set(schemas.LabelEndReason, endReason)
	}
	var total float64
	var ok bool
	if t.output != nil {
		if total, ok = t.output.total(key); ok {
			set(schemas.LabelOutputUnits, strconv.FormatFloat(total, 'f', -1, 64))
			set(schemas.LabelOutputUnit, j.info.Output.Unit)
		}
	}
	return out, total, ok
}

// events returns the start and end events due at atMs.
func (t *jobTracker) events(ctx context.Context, atMs int64) []schemas.JobEvent {
	var out []schemas.JobEvent
	for key, j := range t.jobs {
		if atMs-j.lastMs >= t.endAfter.Milliseconds() {
			end := JobEnd{Reason: j.info.EndReason}
			if t.endReasoner != nil && j.info.Source == schemas.SourceKubernetes {
				end = t.endReasoner.EndReason(ctx, j.info)
			}
			labels, _, _ := t.labels(key, j, end.Reason)
			// The kubelet's status and exit code, when it has them: a pod no other
			// scheduler reports on then has a status job_failures can classify.
			out = append(out, schemas.JobEvent{
				TimeMs: j.lastMs, Job: key, Event: schemas.EventEnd, Cluster: t.cluster,
				Source: j.info.Source, Nodes: []string{t.node}, Labels: labels,
				Status: end.Status, ExitCode: end.ExitCode,
			})
			if t.output != nil {
				t.output.forget(key)
			}
			delete(t.jobs, key)
			continue
		}
		labels, total, haveOutput := t.labels(key, j, "")
		startMs := j.info.StartMs
		if startMs == 0 || startMs > j.firstMs {
			startMs = j.firstMs
		}
		start := schemas.JobEvent{
			TimeMs: startMs, Job: key, Event: schemas.EventStart, Cluster: t.cluster,
			Team: j.info.Team, Project: j.info.Project, Queue: j.info.Queue, Pool: j.info.Pool,
			ModelName: j.info.ModelName, Workload: j.info.Workload, Source: j.info.Source,
			GPUs: uint32(len(j.gpus)), Nodes: []string{t.node}, GPUUUIDs: slices.Clone(j.gpus),
			Labels: labels, Attempt: 1,
		}
		switch {
		case len(j.gpus) > j.announced:
			j.announced = len(j.gpus)
		case haveOutput && total != j.reported && atMs-j.reportedMs >= t.reportEvery.Milliseconds():
			// The running total, at the time it was read: the latest report wins in
			// job_output, and a later start event changes no start time.
			start.TimeMs = atMs
		default:
			continue
		}
		if haveOutput {
			j.reported, j.reportedMs = total, atMs
		}
		out = append(out, start)
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
