package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// kind is what a job does on its GPUs; it decides the job's activity profile and
// which waste, if any, the truth records for it.
type kind uint8

const (
	kindTraining    kind = iota // multi-GPU, near-TDP; may load data first, fail and be rerun
	kindOnline                  // long-running service with diurnal, bursty traffic
	kindBatch                   // steady offline inference for hours
	kindNotebook                // dev notebook: short bursts, then hours idle holding memory → idle
	kindMemoryBound             // DRAM-bound, SM and tensor nearly unused → memory_bound
	kindWrongCard               // a few GB and little compute on an 80 GB card → wrong_card
	kindLowUtil                 // hours at low SM activity, but not idle → low_util
	numKinds
)

// kindModels lists, by name, the models a job of each kind runs.
var kindModels = [numKinds][]string{
	kindTraining:    {"llama-3-70b-sft", "llama-3-8b-instruct", "mistral-7b-chat", "sdxl", "vit-l16", "dlrm-v2", "whisper-large", "mixtral-8x7b", "clip-vit-l", "resnet50"},
	kindOnline:      {"llama-3-8b-instruct", "mistral-7b-chat", "bert-base-ranker", "sdxl", "yolov8-l", "two-tower-retrieval", "whisper-large", "whisper-small"},
	kindBatch:       {"whisper-large", "llama-3-8b-instruct", "clip-vit-l", "resnet50", "sdxl", "fastspeech2"},
	kindNotebook:    {"llama-3-8b-instruct", "bert-base-ranker", "resnet50", "yolov8-l", "two-tower-retrieval", "whisper-small", "ppo-agent", "clip-vit-l", "fastspeech2"},
	kindMemoryBound: {"dlrm-v2", "dcn-v2", "two-tower-retrieval", "llama-3-8b-instruct"},
	kindWrongCard:   {"bert-base-ranker", "resnet50", "yolov8-l", "whisper-small", "fastspeech2", "ppo-agent"},
	kindLowUtil:     {"ppo-agent", "resnet50", "clip-vit-l", "fastspeech2", "vit-l16"},
}

// kindModelIdx is kindModels resolved to indices into models once, at start-up.
var kindModelIdx = func() (out [numKinds][]int) {
	for k, names := range kindModels {
		for _, n := range names {
			out[k] = append(out[k], modelIndex(n))
		}
	}
	return out
}()

// jobState is where a job is in its life.
type jobState uint8

const (
	stateNew jobState = iota
	stateQueued
	stateRunning
	stateEnded
)

// profile is a job's base activity on each of its GPUs, before phases and noise.
type profile struct {
	gr, sm, occ, tensor, dram float32
	rxBytesPerS, txBytesPerS  float32
	// night is an online service's activity at night; gr is its daytime level.
	night float32
	// jitter is the relative per-tick noise.
	jitter float32
}

// segment is a stretch of a notebook's life, relative to its start.
type segment struct {
	fromMs, toMs int64
	idle         bool
}

// job is one attempt of a job: what it asked for, how it behaves and where it runs.
// Everything about its future (duration, failure, leak, phases) is drawn when it
// is created, so the truth can be written exactly.
type job struct {
	key      string
	kind     kind
	c        *cluster
	team     string
	project  string
	queue    string
	pool     string
	model    string
	workload string
	card     string
	source   string
	procName string
	gpus     int
	// migOK: a one-GPU job that asked for a MIG instance and runs only on one;
	// migProfile is the instance's profile it was aimed at ("2g.10gb"), what it
	// asks a gate for.
	migOK      bool
	migProfile string
	// memFrac is the share of each GPU's memory the job fills; memMiB, when set,
	// is an absolute need per GPU instead (small jobs).
	memFrac float32
	memMiB  uint32
	// planMs is the run time the job would have without failing; durMs the run
	// time it will have (shorter when it fails).
	planMs   int64
	durMs    int64
	status   string
	exitCode int32
	xid      uint32
	leaks    bool
	attempt  int
	rerunOf  string
	// requeued: this attempt resumes one an executor stopped with requeue.
	requeued bool
	prof     profile
	// Phases, relative to the start: data loading, checkpoint dips, notebook
	// segments and the period of a notebook's brief spikes while idle.
	loadMs       int64
	ckptEveryMs  int64
	ckptLenMs    int64
	segs         []segment
	spikeEveryMs int64
	// salt seeds the job's own deterministic patterns (inference bursts).
	salt uint64
	// lost: its node was lost; it ends failed when its scheduler notices (loss.go).
	lost bool
	// held: it waits for the fleet's gate to admit it (gate.go).
	held bool
	// Config.RealFleet's patterns: hangMs, when set, is when a training job hangs
	// (relative to its start; hangHost: everything stops, else the engines spin
	// on a collective); memFull, an online server holding most of its memory at
	// a few % compute; burstPeriodMs/burstOnMs, a small job busy only the first
	// burstOnMs of every period.
	hangMs                   int64
	hangHost                 bool
	memFull                  bool
	burstPeriodMs, burstOnMs int64

	state    jobState
	queuedMs int64
	// placeMs orders the queue: the submission time, except that a requeued
	// attempt keeps its first attempt's, so it keeps its place in line.
	placeMs int64
	startMs int64
	endMs   int64
	slots   []slotRef
	truths  []int
	// assigned is where the scheduler placed the job (Fleet.SetPlacer).
	assigned []NodeGPUs
	// missed: it waited once on a slot the scheduler placed it on that was
	// not free (counted once).
	missed bool
	// stopping: an executor stopped it; its stop is due (the scheduler may
	// already have given its GPUs to the next job, which waits for it).
	stopping bool
	// reserved are the nodes the job holds against backfill while it waits.
	reserved []*Node
}

func minutes(m float64) int64 { return int64(m * float64(time.Minute/time.Millisecond)) }
func hours(h float64) int64   { return int64(h * float64(time.Hour/time.Millisecond)) }

// uniform returns a float in [lo, hi).
func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

func uniform32(r *rand.Rand, lo, hi float64) float32 { return float32(uniform(r, lo, hi)) }

// logNormalMs draws a duration around median, clamped to [lo, hi]: job lengths are
// skewed, with a long tail of multi-day runs.
func logNormalMs(r *rand.Rand, median, sigma float64, lo, hi int64) int64 {
	d := int64(float64(median) * math.Exp(sigma*r.NormFloat64()))
	return min(max(d, lo), hi)
}

// pickWeighted returns an index drawn by the given weights.
func pickWeighted(r *rand.Rand, w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	x := r.Float64() * total
	for i, wi := range w {
		if x < wi {
			return i
		}
		x -= wi
	}
	return len(w) - 1
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// pickGPUs draws a GPU count from {1, 2, 4, 8} by weight, capped at the node size.
func pickGPUs(r *rand.Rand, w []float64, perNode int) int {
	return min([]int{1, 2, 4, 8}[pickWeighted(r, w)], perNode)
}

// class is a pool of like capacity in a cluster: whole GPUs of one card type, or
// the MIG instances of one card type. Each class has its own arrival stream sized
// to its capacity, so every card type is loaded as Config.Load asks rather than
// the popular cards queueing while the others sit idle.
type class struct {
	card     *cardSpec
	cardType string
	// mig is the instance layout of the class's GPUs; nil for whole GPUs.
	mig      []migSlice
	nodes    int
	physGPUs int
	// meanGapMs is the mean time between submissions (Poisson arrivals); 0 means
	// none.
	meanGapMs float64
}

// classKindWeights is the share of each kind among the jobs aimed at a class: big
// cards draw training and the waste that wastes them most, inference cards draw
// services and batch jobs, MIG instances draw small jobs.
func classKindWeights(cl *class) []float64 {
	w := make([]float64, numKinds)
	switch {
	case cl.mig != nil:
		w[kindNotebook], w[kindOnline], w[kindBatch] = 0.55, 0.25, 0.2
	case cl.card == &cardH100:
		w[kindTraining], w[kindMemoryBound], w[kindWrongCard], w[kindLowUtil], w[kindNotebook], w[kindBatch] = 0.35, 0.12, 0.2, 0.13, 0.12, 0.08
	case cl.card == &cardA100L:
		w[kindTraining], w[kindBatch], w[kindMemoryBound], w[kindWrongCard], w[kindLowUtil], w[kindNotebook] = 0.3, 0.15, 0.12, 0.15, 0.13, 0.15
	case cl.card == &cardL40S:
		w[kindOnline], w[kindBatch], w[kindLowUtil], w[kindNotebook], w[kindTraining] = 0.25, 0.3, 0.15, 0.2, 0.1
	default:
		w[kindTraining], w[kindOnline], w[kindBatch], w[kindLowUtil], w[kindNotebook] = 0.25, 0.2, 0.25, 0.1, 0.2
	}
	return w
}

// pAnyCard is the chance a whole-GPU job accepts any card type instead of its
// class's.
const pAnyCard = 0.1

// drawJob draws the next job aimed at class cl of cluster c.
func drawJob(r *rand.Rand, c *cluster, cl *class) *job {
	k := kind(pickWeighted(r, classKindWeights(cl)))
	ms := kindModelIdx[k]
	if cl.mig != nil { // only small models fit a MIG instance
		ms = slices.DeleteFunc(slices.Clone(ms), func(i int) bool { return !models[i].small })
	}
	m := models[pick(r, ms)]
	t := teams[m.team]
	j := &job{
		kind: k, c: c, model: m.name, team: t.name, project: pick(r, t.projects),
		source: c.source, attempt: 1, salt: r.Uint64(), status: schemas.StatusSucceeded,
		card: cl.cardType,
	}
	// Services are pinned to their card: a week-long service that landed on a
	// training node would keep whole-node jobs out of it for days.
	if cl.mig == nil && k != kindOnline && r.Float64() < pAnyCard {
		j.card = ""
	}
	perNode := c.gpusPerNode
	switch k {
	case kindTraining:
		j.pool = poolTrainingExp
		if r.Float64() < 0.3 {
			j.pool = poolTrainingProd
		}
		j.workload = schemas.WorkloadTraining
		j.gpus = pickGPUs(r, []float64{0.25, 0.3, 0.3, 0.15}, perNode)
		if cl.card.fbMiB < 80000 {
			// Inference cards also run week-long services; a job wanting a
			// whole node of them would wait for days.
			j.gpus = min(j.gpus, max(1, perNode/2))
		}
		j.memFrac = uniform32(r, 0.70, 0.95)
		j.planMs = logNormalMs(r, float64(hours(4)), 1.0, minutes(40), hours(72))
		j.prof = profile{gr: uniform32(r, 0.90, 0.99), sm: uniform32(r, 0.6, 0.9), occ: uniform32(r, 0.3, 0.6),
			tensor: uniform32(r, 0.3, 0.7), dram: uniform32(r, 0.3, 0.6),
			rxBytesPerS: uniform32(r, 0.2e9, 1e9), txBytesPerS: uniform32(r, 0.05e9, 0.3e9), jitter: 0.04}
		if r.Float64() < 0.4 {
			j.loadMs = minutes(uniform(r, 10, 20))
		}
		j.ckptEveryMs = minutes(uniform(r, 20, 60))
		j.ckptLenMs = int64(uniform(r, 15, 40) * 1000)
		j.procName = pick(r, []string{"python3", "torchrun", "pt_main_thread"})
		if cl.nodes >= 2 && r.Float64() < 0.1 {
			j.gpus, j.card = 2*perNode, cl.cardType
		}
		drawEnding(r, j, 0.15, 0, 0.04)
	case kindOnline:
		j.pool, j.workload = poolInferenceOnline, schemas.WorkloadInference
		j.gpus = pickGPUs(r, []float64{0.7, 0.3, 0, 0}, perNode)
		j.memFrac = uniform32(r, 0.4, 0.6)
		j.planMs = logNormalMs(r, float64(hours(30)), 0.6, hours(12), hours(96))
		// Day and night levels; online() moves between them by local hour.
		j.prof = profile{gr: uniform32(r, 0.2, 0.4), night: uniform32(r, 0.03, 0.08), jitter: 0.15}
		j.procName = "tritonserver"
		if m.llm {
			j.procName = "vllm"
		}
		drawEnding(r, j, 0.01, 0, 0.01)
	case kindBatch:
		j.pool, j.workload = poolInferenceBatch, schemas.WorkloadBatchInference
		j.gpus = pickGPUs(r, []float64{0.4, 0.3, 0.3, 0}, perNode)
		j.memFrac = uniform32(r, 0.5, 0.85)
		j.planMs = logNormalMs(r, float64(hours(3)), 0.6, hours(1), hours(8))
		gr := uniform32(r, 0.5, 0.8)
		j.prof = profile{gr: gr, sm: gr * uniform32(r, 0.75, 0.9), occ: uniform32(r, 0.3, 0.5),
			tensor: uniform32(r, 0.2, 0.5), dram: uniform32(r, 0.3, 0.5),
			rxBytesPerS: uniform32(r, 0.3e9, 1e9), txBytesPerS: uniform32(r, 0.05e9, 0.2e9), jitter: 0.06}
		j.procName = "python3"
		drawEnding(r, j, 0.05, 0.03, 0.04)
	case kindNotebook:
		j.pool, j.workload, j.gpus = poolDev, schemas.WorkloadDev, 1
		j.memMiB = uint32(uniform(r, 2500, 16000))
		j.planMs = logNormalMs(r, float64(hours(8)), 0.7, hours(2), hours(30))
		j.prof = profile{gr: uniform32(r, 0.3, 0.7), sm: uniform32(r, 0.2, 0.5), occ: uniform32(r, 0.2, 0.4),
			tensor: uniform32(r, 0.05, 0.3), dram: uniform32(r, 0.1, 0.3),
			rxBytesPerS: uniform32(r, 50e6, 300e6), txBytesPerS: uniform32(r, 10e6, 50e6), jitter: 0.3}
		j.segs = notebookSegments(r, j.planMs)
		j.spikeEveryMs = minutes(uniform(r, 20, 40))
		j.procName = "jupyter-kernel"
		if r.Float64() < 0.35 {
			j.source = schemas.SourceProcess
		}
		drawEnding(r, j, 0.02, 0.15, 0.08)
	case kindMemoryBound:
		j.pool, j.workload = poolTrainingExp, schemas.WorkloadTraining
		if m.llm || r.Float64() < 0.3 {
			j.pool, j.workload = poolInferenceBatch, schemas.WorkloadBatchInference
		}
		j.gpus = pickGPUs(r, []float64{0.4, 0.3, 0.2, 0.1}, perNode)
		j.memFrac = uniform32(r, 0.5, 0.9)
		j.planMs = logNormalMs(r, float64(hours(5)), 0.5, hours(2), hours(12))
		j.prof = profile{gr: uniform32(r, 0.55, 0.8), sm: uniform32(r, 0.15, 0.28), occ: uniform32(r, 0.1, 0.25),
			tensor: uniform32(r, 0, 0.02), dram: uniform32(r, 0.72, 0.88),
			rxBytesPerS: uniform32(r, 0.5e9, 2e9), txBytesPerS: uniform32(r, 0.1e9, 0.5e9), jitter: 0.05}
		j.procName = "python3"
		drawEnding(r, j, 0.05, 0, 0.03)
	case kindWrongCard:
		switch pickWeighted(r, []float64{0.4, 0.3, 0.3}) {
		case 0:
			j.pool, j.workload = poolDev, schemas.WorkloadDev
		case 1:
			j.pool, j.workload = poolInferenceOnline, schemas.WorkloadInference
		default:
			j.pool, j.workload = poolTrainingExp, schemas.WorkloadTraining
		}
		// It asked for the big card by name; that is the waste.
		j.gpus, j.card = 1, cl.cardType
		j.memMiB = uint32(uniform(r, 3000, 8000))
		j.planMs = logNormalMs(r, float64(hours(6)), 0.6, hours(2), hours(24))
		j.prof = profile{gr: uniform32(r, 0.2, 0.45), sm: uniform32(r, 0.06, 0.18), occ: uniform32(r, 0.05, 0.15),
			tensor: uniform32(r, 0.01, 0.06), dram: uniform32(r, 0.05, 0.15),
			rxBytesPerS: uniform32(r, 20e6, 200e6), txBytesPerS: uniform32(r, 5e6, 50e6), jitter: 0.15}
		j.procName = pick(r, []string{"python3", "tritonserver"})
		if r.Float64() < 0.25 {
			j.source = schemas.SourceProcess
		}
		drawEnding(r, j, 0.03, 0.05, 0.03)
	case kindLowUtil:
		j.pool, j.workload = poolTrainingExp, schemas.WorkloadTraining
		if r.Float64() < 0.3 {
			j.pool, j.workload = poolInferenceBatch, schemas.WorkloadBatchInference
		}
		j.gpus = pickGPUs(r, []float64{0.5, 0.3, 0.2, 0}, perNode)
		j.memFrac = uniform32(r, 0.3, 0.7)
		j.planMs = logNormalMs(r, float64(hours(8)), 0.5, hours(4), hours(24))
		j.prof = profile{gr: uniform32(r, 0.2, 0.35), sm: uniform32(r, 0.07, 0.14), occ: uniform32(r, 0.1, 0.25),
			tensor: uniform32(r, 0.02, 0.08), dram: uniform32(r, 0.05, 0.15),
			rxBytesPerS: uniform32(r, 50e6, 400e6), txBytesPerS: uniform32(r, 10e6, 80e6), jitter: 0.25}
		j.procName = "python3"
		if r.Float64() < 0.15 {
			j.source = schemas.SourceProcess
		}
		drawEnding(r, j, 0.05, 0.02, 0.03)
	}
	if cl.mig != nil {
		// Aim at one instance of the layout: memory that fits it, and a request
		// for the parent card or for any card.
		sl := pick(r, cl.mig)
		j.gpus, j.migOK, j.migProfile = 1, true, sl.profile
		j.memMiB = uint32(float64(sl.fbMiB) * uniform(r, 0.3, 0.85))
		if r.Float64() < 0.5 {
			j.card = ""
		}
	}
	if c.real {
		drawReal(j)
	}
	if j.gpus > perNode {
		j.source = c.source // a hand-started process does not span nodes
	}
	j.queue = j.team + "-" + j.pool
	return j
}

// demandMs is the GPU-milliseconds j occupies of its class, in whole GPUs: a job
// on a MIG instance holds that instance's share of a GPU.
func (j *job) demandMs(cl *class) float64 {
	share := 1.0
	if cl.mig != nil {
		share = 1
		for _, sl := range cl.mig {
			if float64(sl.fbMiB)*0.9 >= float64(j.memMiB) {
				share = min(share, float64(sl.slices)/7)
			}
		}
	}
	return float64(j.gpus) * share * float64(j.durMs)
}

// drawEnding decides how a job ends: failed (with an exit code and, sometimes, the
// XID the driver logged), cancelled, or succeeded; and whether one of its processes
// outlives it.
func drawEnding(r *rand.Rand, j *job, pFail, pCancel, pLeak float64) {
	j.durMs = j.planMs
	switch x := r.Float64(); {
	case x < pFail:
		j.status = schemas.StatusFailed
		j.exitCode = pick(r, []int32{1, 1, 134, 137, 139})
		if r.Float64() < 0.4 {
			j.xid = pick(r, []uint32{79, 48, 31, 43, 13, 94})
		}
		j.durMs = int64(float64(j.planMs) * uniform(r, 0.05, 0.9))
	case x < pFail+pCancel:
		j.status, j.exitCode = schemas.StatusCancelled, 143
		j.durMs = int64(float64(j.planMs) * uniform(r, 0.2, 0.9))
	}
	j.leaks = r.Float64() < pLeak
}

// notebookSegments lays out a notebook's life: a first active stretch, then long
// idle stretches (holding memory) broken by short active ones.
func notebookSegments(r *rand.Rand, planMs int64) []segment {
	var segs []segment
	at, idle := int64(0), false
	for at < planMs {
		d := minutes(uniform(r, 5, 40))
		if idle {
			d = hours(uniform(r, 1, 6))
		}
		end := min(at+d, planMs)
		segs = append(segs, segment{fromMs: at, toMs: end, idle: idle})
		at, idle = end, !idle
	}
	return segs
}

// fate is the job's own random stream, seeded by its salt: what happens after it
// ends is drawn from it.
func (j *job) fate() *rand.Rand { return rand.New(rand.NewPCG(j.salt, 0x66617465)) }

// rerun returns the next attempt of a failed job: same owner, request and
// behaviour, a new key, and a fresh (lower) chance of failing again.
func (j *job) rerun(r *rand.Rand) *job {
	n := *j
	n.key, n.attempt, n.rerunOf, n.requeued = "", j.attempt+1, j.key, false
	n.state, n.slots, n.truths, n.reserved, n.placeMs = stateNew, nil, nil, nil, 0
	n.status, n.exitCode, n.xid, n.lost = schemas.StatusSucceeded, 0, 0, false
	n.salt = r.Uint64()
	drawEnding(r, &n, 0.08, 0, 0.03)
	if n.c.real {
		n.hangMs = 0
		n.drawHang(n.realRand())
	}
	return &n
}

// Chances of Config.RealFleet's patterns.
const (
	// pHang is the chance a training attempt hangs.
	pHang = 0.3
	// pHostHang is the share of hangs that are host-side (everything stops).
	pHostHang = 0.3
	// pMemFull is the chance an online server holds most of its memory.
	pMemFull = 0.15
	// pBursty is the chance a small job on a big card is busy only in bursts.
	pBursty = 0.5
)

// realRand is the job's own stream for Config.RealFleet's draws, so that they do
// not shift the fleet's streams.
func (j *job) realRand() *rand.Rand { return rand.New(rand.NewPCG(j.salt, 0x7265616c)) }

// drawReal draws Config.RealFleet's patterns for a new job.
func drawReal(j *job) {
	r := j.realRand()
	switch j.kind {
	case kindTraining:
		j.drawHang(r)
	case kindOnline:
		// On whole GPUs: a job on a MIG instance was sized to it.
		if r.Float64() < pMemFull && !j.migOK {
			// A serving engine that reserved its memory for a KV cache it never
			// fills, serving a trickle of requests.
			j.memFull, j.memMiB, j.memFrac = true, 0, uniform32(r, 0.85, 0.92)
			j.prof.gr, j.prof.night = uniform32(r, 0.03, 0.07), uniform32(r, 0.02, 0.03)
		}
	case kindWrongCard:
		if r.Float64() < pBursty {
			j.burstPeriodMs = minutes(uniform(r, 10, 25))
			j.burstOnMs = int64(float64(j.burstPeriodMs) * uniform(r, 0.3, 0.5))
		}
	}
}

// drawHang decides whether and when a training attempt hangs: after an hour and
// a half of training, at least 45 minutes before its planned end. A one-GPU job
// hangs only spinning (a kernel waiting on a flag that never flips); the host-side
// hang is detected by all GPUs stopping at once, which needs two.
func (j *job) drawHang(r *rand.Rand) {
	if j.kind != kindTraining || r.Float64() >= pHang {
		return
	}
	earliest, latest := j.loadMs+hours(1.5), j.durMs-minutes(45)
	if latest <= earliest {
		return
	}
	j.hangMs = earliest + int64(r.Float64()*float64(latest-earliest))
	j.hangHost = r.Float64() < pHostHang && j.gpus >= 2
}
