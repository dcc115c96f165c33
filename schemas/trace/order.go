package trace

import (
	"bytes"
	"cmp"
	"container/heap"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Ordering (ReaderOptions.ReorderWindow > 0) puts a trace's records in time order
// before anything bills them, with bounds relative to the trace's own clock: the
// latest time of the lines accepted so far.
//
//   - A line up to ReorderWindow before the clock is held and put back in place
//     (counted as reordered). One further back cannot be placed: it is late.
//   - A line more than FutureSkew after the clock is held as a suspect until the
//     lines after it decide: when at least ConfirmLines lines lie that far ahead
//     and they outnumber the lines that go on at the old clock, the trace jumped
//     (a gap) and the clock moves; otherwise (DecideLines lines at the old clock,
//     or the end of the trace first) the suspects are future lines.
//
// A late or future line is dropped and counted by a lenient Reader (its
// LineError says why); a strict one reads on only to count them, then stops with
// an *OrderError naming the count and the first.

// Defaults and constants of ordering.
const (
	// DefaultMaxHeld bounds the records held for reordering: past it the earliest
	// is released early, and a line that should have come before it is late.
	DefaultMaxHeld = 1 << 20
	// ConfirmLines is how many lines beyond the future skew make a jump (a gap in
	// the trace) rather than a line dated in the future.
	ConfirmLines = 4
	// DecideLines is how many lines at the old clock after a suspect make it a
	// future line.
	DecideLines = 64
)

// OrderStats counts what ordering did.
type OrderStats struct {
	// Reordered lines came after a line of a later time and were put back in place.
	Reordered int
	// Late lines came more than the reorder window before the trace's clock (or
	// after the held records overflowed): dropped or refused.
	Late int
	// Future lines lay more than the future skew after the trace's clock and the
	// lines after them did not follow: dropped or refused.
	Future int
	// Invalid lines broke a bound that relates them to other lines (a process's
	// memory beyond its GPU's, an energy counter's jump): dropped or refused.
	Invalid int
}

// OrderError stops a strict, ordering Reader whose trace breaks the time bounds:
// how many lines, and the first.
type OrderError struct {
	Late, Future int
	First        LineError
}

func (e *OrderError) Error() string {
	var parts []string
	if e.Late > 0 {
		parts = append(parts, strconv.Itoa(e.Late)+" late")
	}
	if e.Future > 0 {
		parts = append(parts, strconv.Itoa(e.Future)+" in the future")
	}
	return fmt.Sprintf("trace: %d lines out of time order beyond the bounds (%s); first: %s",
		e.Late+e.Future, strings.Join(parts, ", "), e.First.Error())
}

// Unwrap makes errors.Is(err, ErrInvalidRecord) true.
func (e *OrderError) Unwrap() error { return ErrInvalidRecord }

type held struct {
	rec  Record
	ms   int64
	line int
	seq  uint64
	clk  int64 // the trace's clock when a suspect was read
}

type orderer struct {
	window, skew int64 // ms
	maxHeld      int
	h            heldHeap
	seq          uint64
	clock        int64 // latest time accepted; 0 before the first line
	lastOut      int64 // time of the last record released
	released     bool
	suspects     []held
	normals      int // lines accepted since the first suspect
	eof          bool
	stats        OrderStats
	first        *LineError // first late or future line
	drop         func(line int, reason string)
}

func newOrderer(opts ReaderOptions, drop func(int, string)) *orderer {
	o := &orderer{window: opts.ReorderWindow.Milliseconds(), skew: opts.FutureSkew.Milliseconds(), maxHeld: opts.MaxHeld, drop: drop}
	if o.maxHeld <= 0 {
		o.maxHeld = DefaultMaxHeld
	}
	return o
}

func (o *orderer) add(h held) {
	if o.clock != 0 && o.skew > 0 && h.ms > o.clock+o.skew {
		h.clk = o.clock
		o.suspects = append(o.suspects, h)
		if len(o.suspects) >= ConfirmLines && len(o.suspects) > o.normals {
			o.jump()
		}
		return
	}
	o.accept(h)
	if len(o.suspects) > 0 {
		if o.normals++; o.normals >= DecideLines {
			o.dropSuspects()
		}
	}
}

func (o *orderer) accept(h held) {
	if o.clock != 0 && (h.ms < o.clock-o.window || o.released && h.ms < o.lastOut) {
		o.stats.Late++
		o.reject(h.line, fmt.Sprintf("late: ts %s is %s before the trace's clock %s (the latest time of the lines before it); lines may be out of order by at most the reorder window, %s",
			fmtMs(h.ms), fmtGap(o.clock-h.ms), fmtMs(o.clock), time.Duration(o.window)*time.Millisecond))
		return
	}
	if h.ms < o.clock {
		o.stats.Reordered++
	}
	o.clock = max(o.clock, h.ms)
	heap.Push(&o.h, h)
}

// jump moves the clock to the suspects: the trace has a gap.
func (o *orderer) jump() {
	ss := o.suspects
	o.suspects, o.normals = nil, 0
	o.clock = ss[0].ms
	for _, s := range ss[1:] {
		o.clock = min(o.clock, s.ms)
	}
	for _, s := range ss {
		o.add(s)
	}
}

func (o *orderer) dropSuspects() {
	for _, s := range o.suspects {
		o.stats.Future++
		o.reject(s.line, fmt.Sprintf("future: ts %s is %s after the trace's clock %s (the latest time of the lines before it), more than the future skew %s, and fewer than %d lines follow it there",
			fmtMs(s.ms), fmtGap(s.ms-s.clk), fmtMs(s.clk), time.Duration(o.skew)*time.Millisecond, ConfirmLines))
	}
	o.suspects, o.normals = nil, 0
}

func (o *orderer) reject(line int, reason string) {
	if o.first == nil {
		o.first = &LineError{Line: line, Reason: reason}
	}
	o.drop(line, reason)
}

// finish decides the suspects left at the end of the trace.
func (o *orderer) finish() {
	o.eof = true
	for len(o.suspects) > 0 {
		if len(o.suspects) >= ConfirmLines && len(o.suspects) > o.normals {
			o.jump()
			continue
		}
		o.dropSuspects()
	}
}

// next returns the next record due: every held one at the end, else the earliest
// when it lies beyond the window before the clock or too many are held.
func (o *orderer) next() (held, bool) {
	if len(o.h) == 0 {
		return held{}, false
	}
	if top := o.h[0]; o.eof || top.ms < o.clock-o.window || len(o.h) > o.maxHeld {
		h := heap.Pop(&o.h).(held)
		o.lastOut, o.released = h.ms, true
		return h, true
	}
	return held{}, false
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// fmtGap says a gap of ms as a duration, or in days or years past what a
// Duration holds.
func fmtGap(ms int64) string {
	if ms < 100*365*24*3600*1000 {
		return (time.Duration(ms) * time.Millisecond).String()
	}
	return spanWords(ms)
}

// heldHeap orders held records by time, then by what they are (kind, place,
// GPU, process or job event), then by their content, then by line: the order
// they leave in does not depend on the order they came in, so the first of two
// conflicting records of one key is the same whichever way the file was sorted.
type heldHeap []held

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if c := cmpHeld(h[i], h[j]); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type sortKey struct {
	kind             RecordKind
	cluster, node, a string
	b                string
	n                uint64
}

func keyOf(r Record) sortKey {
	switch {
	case r.GPU != nil:
		return sortKey{KindGPU, r.GPU.Cluster, r.GPU.Node, r.GPU.GPUUUID, "", 0}
	case r.Process != nil:
		return sortKey{KindProcess, r.Process.Cluster, r.Process.Node, r.Process.GPUUUID, "", uint64(r.Process.PID)}
	case r.Job != nil:
		return sortKey{KindJob, r.Job.Cluster, r.Job.Job, r.Job.Event, "", uint64(r.Job.Attempt)}
	}
	return sortKey{}
}

func cmpHeld(x, y held) int {
	if c := cmp.Compare(x.ms, y.ms); c != 0 {
		return c
	}
	kx, ky := keyOf(x.rec), keyOf(y.rec)
	if c := cmp.Or(cmp.Compare(kx.kind, ky.kind), cmp.Compare(kx.cluster, ky.cluster), cmp.Compare(kx.node, ky.node),
		cmp.Compare(kx.a, ky.a), cmp.Compare(kx.n, ky.n)); c != 0 {
		return c
	}
	return bytes.Compare(encode(x.rec), encode(y.rec))
}

// encode writes r as a trace line (for ordering records of the same key).
func encode(r Record) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, false)
	if w.WriteRecord(r) != nil || w.Flush() != nil {
		return nil
	}
	return buf.Bytes()
}

// physics checks the bounds that relate a record to others of its GPU, in the
// order records are returned: a process's memory within its GPU's, an energy
// counter that rises no faster than the most a GPU can draw.
type physics struct {
	fbTotal map[string]uint32 // GPU → fb_total_mib, from the gpu rows read
	energy  map[string][2]int64
}

func (p *physics) saw(r Record) {
	if r.GPU == nil || r.GPU.FBTotalMiB == 0 {
		return
	}
	if p.fbTotal == nil {
		p.fbTotal = make(map[string]uint32)
	}
	p.fbTotal[r.GPU.GPUUUID] = r.GPU.FBTotalMiB
}

// check returns why r breaks a bound relating it to the records before it, or "".
func (p *physics) check(r Record) string {
	switch {
	case r.Process != nil:
		if total, ok := p.fbTotal[r.Process.GPUUUID]; ok {
			if why := schemas.ProcessMemoryReason(r.Process.FBUsedMiB, total); why != "" {
				return fmt.Sprintf("%s (GPU %s): a process holds at most its GPU's memory (on a shared GPU it would take the other tenants' share of the bill)", why, r.Process.GPUUUID)
			}
		}
	case r.GPU != nil && r.GPU.EnergyMilliJ > 0:
		s := r.GPU
		if p.energy == nil {
			p.energy = make(map[string][2]int64)
		}
		e := int64(s.EnergyMilliJ) // at most MaxEnergyMilliJ
		if last, ok := p.energy[s.GPUUUID]; ok && s.TimeMs >= last[0] {
			if why := schemas.EnergyStepReason(uint64(last[1]), last[0], s.EnergyMilliJ, s.TimeMs); why != "" {
				return fmt.Sprintf("%s since the GPU's last sample (%d mJ at %s)", why, last[1], time.UnixMilli(last[0]).UTC().Format(time.RFC3339Nano))
			}
		}
		p.energy[s.GPUUUID] = [2]int64{s.TimeMs, e}
	}
	return ""
}
