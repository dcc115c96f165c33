package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Fleet is the simulated fleet: clusters of nodes, the jobs on them and the
// scheduler that places them. Advance moves it through simulated time; its Nodes
// are sampled between Advances. A Fleet is not safe for concurrent use, except that
// different Nodes may be sampled concurrently after Advance returns.
type Fleet struct {
	cfg Config
	// r draws what depends on the fleet's state (keys, PIDs, the jobs found
	// running at the start); ar draws what arrives (jobs, stray processes), so
	// that the workload is the same whatever executors do to the fleet: two
	// runs of one seed, with and without enforcement, see the same jobs.
	r  *rand.Rand
	ar *rand.Rand
	// lr draws node losses (loss.go), apart from arrivals.
	lr       *rand.Rand
	clusters []*cluster
	nodes    []*Node
	units    int
	startMs  int64
	// nowMs is the simulated time: the last Advance time, or the time of the
	// event being handled during Advance.
	nowMs  int64
	seq    uint64
	events eventHeap
	out    []schemas.JobEvent
	truths []truthRec
	// failures is why each attempt that did not succeed ended (failure.go).
	failures []FailureTruth
	// losses are the nodes lost (loss.go).
	losses []NodeLoss
	// runningJobs finds a running job by key, for executors.
	runningJobs map[string]*job
	// strayGapMs is the mean time between stray processes appearing fleet-wide.
	strayGapMs float64
	// gate admits the jobs a scheduler knows (gate.go); waiting are the jobs it
	// holds, dirty the clusters where it admitted some since the last event.
	gate    Gate
	waiting map[string]*job
	dirty   []*cluster

	queued, running, ended, allocated int
	// placer says where the scheduler placed an admitted job; placeRun and
	// placeMissed count the jobs run there (placeRunMIG those of them on MIG
	// instances) and those that could not be.
	placer                             func(key string) []NodeGPUs
	placeRun, placeRunMIG, placeMissed int
	missWhy                            map[string]int
	// outside is what the last report to an OutsideGate said holds each slot.
	outside map[outsideKey]string
}

// Stats is the fleet at a glance, for a progress line.
type Stats struct {
	Now           time.Time
	JobsQueued    int
	JobsRunning   int
	JobsEnded     int
	GPUsAllocated int
	GPUs          int
}

// Tuning that shapes the workload beyond what Config exposes.
const (
	// strayPerNodeDay is how many unattributed stray processes a node sees a day.
	strayPerNodeDay = 0.5
	// demandSamples is how many job draws estimate a class's mean demand.
	demandSamples = 2000
	// maxInitialMs bounds the jobs already running at the start (length-biased:
	// long jobs are more likely to be found running at any instant).
	maxInitialMs = 96 * 3600 * 1000
)

// New builds the fleet described by cfg. The jobs found running at cfg.Start are
// submitted and started at cfg.Start, so the first Advance returns their events.
func New(cfg Config) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim: invalid config: %w", err)
	}
	startMs := cfg.Start.UnixMilli()
	f := &Fleet{
		cfg:         cfg,
		r:           rand.New(rand.NewPCG(cfg.Seed, 0x6770757067706f6f)),
		ar:          rand.New(rand.NewPCG(cfg.Seed, 0x6172726976616c73)),
		lr:          rand.New(rand.NewPCG(cfg.Seed, lossStreamB)),
		startMs:     startMs,
		nowMs:       startMs - 1,
		runningJobs: map[string]*job{},
	}
	tickMs := cfg.Tick.Milliseconds()
	for ci := range cfg.Clusters {
		reg := regions[ci%len(regions)]
		c := &cluster{
			index: ci, name: clusterName(ci), utcOffsetMs: int64(reg.utcOffsetH) * 3600 * 1000,
			source: schemas.SourceKubernetes, gpusPerNode: cfg.GPUsPerNode,
			nextSlurmID: 100000 + hash3(cfg.Seed, uint64(ci), 0x51)%800000,
			real:        cfg.RealFleet,
		}
		if ci%2 == 1 {
			c.source = schemas.SourceSlurm
		}
		for j := range cfg.NodesPerCluster {
			typ := nodeTypes[(ci+j)%len(nodeTypes)]
			n := newNode(cfg.Seed, c, j, len(f.nodes), cfg.GPUsPerNode, typ, tickMs)
			c.nodes = append(c.nodes, n)
			c.addClass(n, typ)
			f.nodes = append(f.nodes, n)
			f.units += len(n.slots)
		}
		f.clusters = append(f.clusters, c)
	}
	for _, c := range f.clusters {
		for i, cl := range c.classes {
			f.populate(c, cl, i)
		}
	}
	f.strayGapMs = float64(dayMs) / (strayPerNodeDay * float64(len(f.nodes)))
	f.push(event{atMs: startMs + int64(f.ar.ExpFloat64()*f.strayGapMs), kind: evStray})
	f.scheduleNodeLoss()
	return f, nil
}

// populate sets the arrival rate of class cl of cluster c and submits, at the
// start time, the jobs that class would already be running at that load.
func (f *Fleet) populate(c *cluster, cl *class, index int) {
	if f.cfg.Load == 0 {
		return
	}
	// Estimate the mean demand per job with a private stream, so the estimate
	// does not shift the fleet's own draws.
	est := rand.New(rand.NewPCG(hash3(f.cfg.Seed, uint64(c.index), uint64(index)), 0xd))
	total := 0.0
	for range demandSamples {
		total += drawJob(est, c, cl).demandMs(cl)
	}
	meanDemandMs := total / demandSamples
	target := f.cfg.Load * float64(cl.physGPUs)
	cl.meanGapMs = meanDemandMs / target

	demand := 0.0
	for tries := 0; demand < target && tries < 100000; tries++ {
		j := drawJob(f.r, c, cl)
		if f.r.Float64()*maxInitialMs > float64(j.durMs) {
			continue
		}
		// Found mid-run: what is left of it is uniform over its length.
		scale := max(f.r.Float64(), float64(minutes(10))/float64(j.durMs))
		j.durMs = int64(float64(j.durMs) * scale)
		if c.real {
			j.hangMs = 0
			j.drawHang(j.realRand()) // within what is left of it
		}
		gpus := j.demandMs(cl) / float64(j.durMs)
		if demand+gpus > target+0.5 {
			continue // would not have fit
		}
		demand += gpus
		f.push(event{atMs: f.startMs, kind: evSubmit, j: j})
	}
	f.push(event{atMs: f.startMs + int64(f.ar.ExpFloat64()*cl.meanGapMs), kind: evArrive, c: c, cl: cl})
}

// Advance moves the simulation to t and returns the job events of (previous t, t]
// in time order. A t at or before the previous one changes nothing.
func (f *Fleet) Advance(t time.Time) []schemas.JobEvent {
	tMs := t.UnixMilli()
	if tMs <= f.nowMs {
		return nil
	}
	f.scheduleDirty() // what the gate admitted since the last Advance starts now
	for len(f.events) > 0 && f.events[0].atMs <= tMs {
		e := heap.Pop(&f.events).(event)
		f.nowMs = e.atMs
		f.handle(e)
	}
	if f.gate != nil {
		f.reportOutside()
	}
	f.nowMs = tMs
	out := f.out
	f.out = nil
	return out
}

// handle carries out one scheduled event at f.nowMs.
func (f *Fleet) handle(e event) {
	switch e.kind {
	case evArrive:
		f.submit(drawJob(f.ar, e.c, e.cl))
		f.schedule(e.c)
		f.push(event{atMs: f.nowMs + 1 + int64(f.ar.ExpFloat64()*e.cl.meanGapMs), kind: evArrive, c: e.c, cl: e.cl})
	case evSubmit:
		if e.requeue {
			f.submitRequeued(e.j)
		} else {
			f.submit(e.j)
		}
		f.schedule(e.j.c)
	case evEnd:
		if e.j.state != stateRunning || e.j.endMs != f.nowMs || e.j.lost {
			return // stopped early, or lost with its node: this end is stale
		}
		f.finish(e.j, e.j.status, e.j.exitCode)
		f.schedule(e.j.c)
	case evProcEnd:
		if p, ok := e.n.removeProc(e.pid); ok {
			f.endTruth(p.truth, f.nowMs)
			f.schedule(e.n.c)
		}
	case evStop:
		if e.j.state != stateRunning || (e.j.lost && e.status != schemas.StatusFailed) {
			return // it ended on its own first, or its node was lost: it fails with it
		}
		e.j.leaks = false // a stop kills the whole process tree
		f.finish(e.j, e.status, exitSIGTERM)
		if e.requeue {
			f.requeue(e.j, e.toRightCard)
		}
		f.schedule(e.j.c)
	case evNodeLost:
		f.loseNode(e.n)
		f.scheduleNodeLoss()
	case evNodeBack:
		if !e.n.down(f.nowMs) {
			for i := range e.n.slots {
				e.n.slots[i].down = false
			}
			f.schedule(e.n.c)
		}
	case evStray:
		f.stray()
		f.push(event{atMs: f.nowMs + 1 + int64(f.ar.ExpFloat64()*f.strayGapMs), kind: evStray})
	}
}

// Nodes returns the fleet's nodes, cluster by cluster, in a stable order.
func (f *Fleet) Nodes() []*Node { return f.nodes }

// GPUCount returns the number of allocatable GPU units: whole GPUs, with each MIG
// instance counted on its own.
func (f *Fleet) GPUCount() int { return f.units }

// Clusters returns the cluster names in order.
func (f *Fleet) Clusters() []string {
	out := make([]string, len(f.clusters))
	for i, c := range f.clusters {
		out[i] = c.name
	}
	return out
}

// Stats returns job and allocation counts at the current simulated time.
func (f *Fleet) Stats() Stats {
	return Stats{
		Now: time.UnixMilli(max(f.nowMs, f.startMs)).UTC(), JobsQueued: f.queued, JobsRunning: f.running,
		JobsEnded: f.ended, GPUsAllocated: f.allocated, GPUs: f.units,
	}
}

// evKind is what a scheduled event does.
type evKind uint8

const (
	evArrive   evKind = iota // a new job for class cl arrives at cluster c
	evSubmit                 // job j (an initial job or a rerun) is submitted
	evEnd                    // job j ends as planned
	evProcEnd                // process pid on node n exits (a zombie or stray is killed)
	evStray                  // a stray process appears somewhere
	evStop                   // job j is stopped by an executor with status (and maybe requeued)
	evNodeLost               // node n is lost (loss.go)
	evNodeBack               // node n comes back
)

// event is one scheduled happening; seq breaks ties in scheduling order so that
// runs are reproducible.
type event struct {
	atMs   int64
	seq    uint64
	kind   evKind
	c      *cluster
	cl     *class
	j      *job
	n      *Node
	pid    uint32
	status string
	// requeue: the stopped job's remaining work is queued again (evStop); the
	// submitted job is a requeued attempt (evSubmit).
	requeue bool
	// toRightCard: a policy requeued the job for wrong_card; its next attempt
	// asks for the card the finding recommends (RequeueFor).
	toRightCard bool
}

func (f *Fleet) push(e event) {
	f.seq++
	e.seq = f.seq
	heap.Push(&f.events, e)
}

// eventHeap orders events by time, then by scheduling order.
type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(a, b int) bool {
	if h[a].atMs != h[b].atMs {
		return h[a].atMs < h[b].atMs
	}
	return h[a].seq < h[b].seq
}
func (h eventHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
