package replay

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
)

// Tick is what happened at one moment of the trace.
type Tick struct {
	// At is the trace time of the tick.
	At time.Time
	// Batches holds one batch per (cluster, node) that has sample rows at At,
	// sorted by cluster then node. Rows keep their trace order; their Cluster and
	// Node are set. CollectorID and Seq are left for the consumer.
	Batches []*schemas.SampleBatch
	// Jobs are the job events at At, in trace order.
	Jobs []schemas.JobEvent
}

// Stats are totals since the Player started.
type Stats struct {
	Ticks       uint64
	GPURows     uint64
	ProcessRows uint64
	JobEvents   uint64
	// DuplicateRecords repeated a record of their Tick (the same GPU, the same
	// process on a GPU, the same job event) and were dropped: a trace with every line
	// doubled must not bill twice.
	DuplicateRecords uint64
	// LateRecords came after their Tick had been played (a node lagging more than
	// Config.Window); each was played in an extra Tick at the last Tick's time.
	LateRecords uint64
	// SkippedLines are the bad lines a lenient reader skipped; see Errors.
	SkippedLines int
}

type place struct{ cluster, node string }

// group is the records of one timestamp waiting to be played.
type group struct {
	batches map[place]*schemas.SampleBatch
	jobs    []schemas.JobEvent
	seen    map[recordKey]struct{}
}

// recordKey is what makes a record unique within its timestamp: the GPU of a GPU
// row, the GPU and PID of a process row, the job, event and attempt of a job event.
type recordKey struct {
	kind             trace.RecordKind
	cluster, node, a string
	n                uint64
}

func keyOf(rec trace.Record) recordKey {
	switch {
	case rec.GPU != nil:
		return recordKey{trace.KindGPU, rec.GPU.Cluster, rec.GPU.Node, rec.GPU.GPUUUID, 0}
	case rec.Process != nil:
		return recordKey{trace.KindProcess, rec.Process.Cluster, rec.Process.Node, rec.Process.GPUUUID, uint64(rec.Process.PID)}
	case rec.Job != nil:
		return recordKey{trace.KindJob, rec.Job.Cluster, rec.Job.Job, rec.Job.Event, uint64(rec.Job.Attempt)}
	}
	return recordKey{}
}

// Player turns a trace into Ticks. It is not safe for concurrent use.
type Player struct {
	r        *trace.Reader
	cfg      Config
	clock    Clock
	windowMs int64

	pending map[int64]*group
	times   msHeap
	maxMs   int64 // the latest time read
	lastMs  int64 // the time of the last Tick played
	played  bool
	eof     bool
	err     error // what stopped reading: a strict reader's *LineError or an I/O error

	ready   *Tick // taken from pending, waiting for its time
	started bool
	wall0   time.Time
	trace0  int64

	stats Stats
}

// New returns a Player of the records r reads.
func New(r *trace.Reader, cfg Config, opts ...Option) (*Player, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if r == nil {
		return nil, errors.New("replay: a trace reader is required")
	}
	p := &Player{
		r: r, cfg: cfg, clock: systemClock{}, windowMs: cfg.Window.Milliseconds(),
		pending: make(map[int64]*group),
	}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// Next returns the next Tick, waiting for its time in real-time mode. At the end of
// the trace it returns io.EOF; if reading stopped (a bad line in strict mode, a read
// error) it returns the Ticks read before, then that error. If ctx ends while it
// waits, it returns ctx.Err() and the same Tick on the next call.
func (p *Player) Next(ctx context.Context) (Tick, error) {
	if err := ctx.Err(); err != nil {
		return Tick{}, err
	}
	if p.ready == nil {
		for !p.due() && !p.eof && p.err == nil {
			rec, err := p.r.Next()
			switch {
			case errors.Is(err, io.EOF):
				p.eof = true
			case err != nil:
				p.err = fmt.Errorf("replay: %w", err)
			default:
				p.add(rec)
			}
		}
		if len(p.times) == 0 {
			if p.err != nil {
				return Tick{}, p.err
			}
			return Tick{}, io.EOF
		}
		t := p.pop()
		p.ready = &t
	}
	if err := p.wait(ctx, p.ready.At); err != nil {
		return Tick{}, err
	}
	t := *p.ready
	p.ready = nil
	return t, nil
}

// due reports whether the earliest pending time is complete: a record more than
// the window later has been read.
func (p *Player) due() bool {
	return len(p.times) > 0 && p.times[0]+p.windowMs < p.maxMs
}

func (p *Player) add(rec trace.Record) {
	ms := rec.TimeMs()
	p.maxMs = max(p.maxMs, ms)
	if p.played && ms <= p.lastMs {
		p.stats.LateRecords++
		ms = p.lastMs
	}
	g := p.pending[ms]
	if g == nil {
		g = &group{seen: make(map[recordKey]struct{})}
		p.pending[ms] = g
		heap.Push(&p.times, ms)
	}
	k := keyOf(rec)
	if _, dup := g.seen[k]; dup {
		p.stats.DuplicateRecords++
		return
	}
	g.seen[k] = struct{}{}
	batch := func(cluster, node string) *schemas.SampleBatch {
		k := place{cluster, node}
		b := g.batches[k]
		if b == nil {
			if g.batches == nil {
				g.batches = make(map[place]*schemas.SampleBatch)
			}
			b = &schemas.SampleBatch{Cluster: cluster, Node: node}
			g.batches[k] = b
		}
		return b
	}
	switch {
	case rec.GPU != nil:
		b := batch(rec.GPU.Cluster, rec.GPU.Node)
		b.GPUs = append(b.GPUs, *rec.GPU)
		p.stats.GPURows++
	case rec.Process != nil:
		b := batch(rec.Process.Cluster, rec.Process.Node)
		b.Processes = append(b.Processes, *rec.Process)
		p.stats.ProcessRows++
	case rec.Job != nil:
		g.jobs = append(g.jobs, *rec.Job)
		p.stats.JobEvents++
	}
}

func (p *Player) pop() Tick {
	ms := heap.Pop(&p.times).(int64)
	g := p.pending[ms]
	delete(p.pending, ms)
	p.lastMs, p.played = ms, true
	p.stats.Ticks++
	t := Tick{At: time.UnixMilli(ms).UTC(), Jobs: g.jobs}
	for _, b := range g.batches {
		t.Batches = append(t.Batches, b)
	}
	slices.SortFunc(t.Batches, func(a, b *schemas.SampleBatch) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Node, b.Node))
	})
	return t
}

// wait sleeps until at's place in the schedule: the first Tick plays at once, each
// later one (at - first)/Speed after it. A caller slower than the schedule is not
// waited for, so a late Tick plays at once rather than pushing the rest back.
func (p *Player) wait(ctx context.Context, at time.Time) error {
	if p.cfg.Speed == 0 {
		return nil
	}
	now := p.clock.Now()
	ms := at.UnixMilli()
	if !p.started {
		p.started, p.wall0, p.trace0 = true, now, ms
		return nil
	}
	offset := time.Duration(float64(ms-p.trace0) * float64(time.Millisecond) / p.cfg.Speed)
	if d := p.wall0.Add(offset).Sub(now); d > 0 {
		return p.clock.Sleep(ctx, d)
	}
	return nil
}

// Stats returns totals since the Player started.
func (p *Player) Stats() Stats {
	s := p.stats
	s.SkippedLines = p.r.Skipped()
	return s
}

// Errors returns the first bad lines the reader skipped (lenient mode).
func (p *Player) Errors() []trace.LineError { return p.r.Errors() }

// msHeap is a min-heap of times in ms.
type msHeap []int64

func (h msHeap) Len() int           { return len(h) }
func (h msHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h msHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *msHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *msHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
