package ingest

import (
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/wirepb"
)

// Duplicates by content. JetStream's message IDs and the intents make one
// message stored once; the same rows can still come twice under different
// message IDs (a producer that republishes what it read again, a replayed
// spool, two copies of a trace) or twice in one message. A row is named by its
// content key:
//
//   - a GPU sample by (cluster, node, gpu_uuid, ts);
//   - a process sample by (cluster, node, gpu_uuid, pid, ts);
//   - a job event by all its fields: a multi-node Slurm job has one start event
//     per node with the same key, time and attempt, differing in nodes and GPUs.
//
// Each row of a message is judged against the batch being gathered (own), the
// batch being inserted (flight) and the keys of the batches this process
// committed (stored: Config.DedupRows, in two generations):
//
//   - a repeat within the batch is dropped from it: a batch rebuilt from the
//     stream after a crash drops the same rows, so its every table gets the same
//     rows under the intent's tokens;
//   - a message with a row of the batch in flight is handed back until that
//     flush settles (stored, or left to redelivery and forgotten);
//   - a message whose rows are all stored already (or in the batch) is
//     acknowledged without entering a batch (repeatError): it is in no intent, so
//     no recovery can bring its rows back;
//   - a message with new rows is gathered whole, its rows that were stored before
//     included. Dropping those from the batch would make the batch differ from
//     what a recovery rebuilds from the stream, and a crash between two tables'
//     inserts would store the tables differently.
//
// Rows dropped are counted in gpupool_ingest_duplicate_rows_total. Keys are
// 128-bit hashes (two seeds), so two different rows never meet in practice.
type rowKey struct{ a, b uint64 }

// recentKeys holds the keys of committed batches, newest last, copied into
// keyRuns (17 bytes a key; the batches' sets are emptied for the next batch):
// whole batches are forgotten, oldest first, while more than limit keys are
// held (the newest is always kept). Batches smaller than limit/8 are gathered
// into one set first (open, a keySet, made a run once it holds limit/8 keys
// or a larger batch comes), so that a lookup looks in a handful of sets at
// most. It also keeps seen, a filter over every key its dedups hold (their
// batches' keys and the committed ones): a key the filter has not seen is new
// without a lookup in any of the sets, which is what most rows are.
type recentKeys struct {
	limit int
	gens  []keyRun
	// open gathers small batches: the newest set when it holds any key.
	open keySet
	held int
	seen seenFilter
	// dedups are the batches' deduplicators sharing these keys: a rebuild of
	// the filter takes their keys too.
	dedups []*dedup
}

func newRecentKeys(limit int) *recentKeys {
	return &recentKeys{limit: limit, seen: newSeenFilter(0)}
}

func (r *recentKeys) has(k rowKey) bool {
	if r == nil {
		return false
	}
	if r.open.has(k) {
		return true
	}
	for i := len(r.gens) - 1; i >= 0; i-- {
		if r.gens[i].has(k) {
			return true
		}
	}
	return false
}

// sets is how many sets the keys are held in.
func (r *recentKeys) sets() int {
	if r.open.len() > 0 {
		return len(r.gens) + 1
	}
	return len(r.gens)
}

// add takes the keys of a committed batch and empties ks (its dedup gathers
// its next batch in it).
func (r *recentKeys) add(ks *keySet) {
	if r == nil || r.limit <= 0 || ks.len() == 0 {
		ks.reset()
		return
	}
	// The filter has a batch's keys already; any other's must be too.
	small := max(r.limit/8, 1)
	if ks.len() < small {
		n := r.open.len()
		for k := range ks.all() {
			r.seen.add(k)
			r.open.add(k)
		}
		r.held += r.open.len() - n // a key of two small batches is held once
		if r.open.len() >= small {
			r.closeOpen()
		}
	} else {
		r.closeOpen()
		r.gens = append(r.gens, newKeyRun(ks.len(), ks.all(), &r.seen))
		r.held += ks.len()
	}
	for r.sets() > 1 && r.held > r.limit {
		r.held -= r.gens[0].len()
		r.gens[0] = keyRun{}
		r.gens = r.gens[1:]
	}
	ks.reset()
	r.refilter()
}

// closeOpen makes the small batches gathered a run.
func (r *recentKeys) closeOpen() {
	if r.open.len() == 0 {
		return
	}
	r.gens = append(r.gens, newKeyRun(r.open.len(), r.open.all(), nil))
	r.open = keySet{}
}

// refilter rebuilds the filter from the keys held now once too many of its
// bits are set (keys forgotten leave theirs set: the filter only ever says
// "maybe" more often, never "new" wrongly), sized for them: 16 bits a key,
// from 64 Ki bits to 64 Mi bits (8 MiB).
func (r *recentKeys) refilter() {
	if r == nil || !r.seen.full() {
		return
	}
	live := r.held
	for _, d := range r.dedups {
		live += d.own.len()
	}
	r.seen = newSeenFilter(16 * live)
	for k := range r.open.all() {
		r.seen.add(k)
	}
	for _, g := range r.gens {
		for _, k := range g.keys {
			r.seen.add(k)
		}
	}
	for _, d := range r.dedups {
		for k := range d.own.all() {
			r.seen.add(k)
		}
	}
}

// seenFilter is a Bloom filter of two probes (one from each half of a key):
// at 16 bits a key, a false "maybe" for about 5 % of new keys when it is
// rebuilt, rising to about 11 % by the time a third of its bits are set.
type seenFilter struct {
	bits []uint64
	mask uint64
	set  int
}

func newSeenFilter(want int) seenFilter {
	n := uint64(1) << 16
	for n < uint64(want) && n < 1<<26 {
		n <<= 1
	}
	return seenFilter{bits: make([]uint64, n/64), mask: n - 1}
}

func (f *seenFilter) add(k rowKey) {
	for _, i := range [2]uint64{k.a & f.mask, k.b & f.mask} {
		w, m := i>>6, uint64(1)<<(i&63)
		if f.bits[w]&m == 0 {
			f.bits[w] |= m
			f.set++
		}
	}
}

// mayHave is false for a key never added since the filter was built.
func (f *seenFilter) mayHave(k rowKey) bool {
	i, j := k.a&f.mask, k.b&f.mask
	return f.bits[i>>6]&(1<<(i&63)) != 0 && f.bits[j>>6]&(1<<(j&63)) != 0
}

// full reports whether a third of the bits are set.
func (f *seenFilter) full() bool { return f.set > len(f.bits)*64/3 }

// dedup decides which rows of a message are new: not in this batch (own), the
// batch being inserted (inflight) or recent batches.
type dedup struct {
	own      *keySet
	inflight *keySet
	recent   *recentKeys
	// inMsg is the keys of the message being judged (reused).
	inMsg map[rowKey]struct{}
}

// keySeedA and keySeedB seed the content keys: one pair per process, so that
// every batch's keys compare.
var keySeedA, keySeedB = maphash.MakeSeed(), maphash.MakeSeed()

func newDedup(recent *recentKeys) *dedup {
	d := &dedup{own: &keySet{}, recent: recent, inMsg: map[rowKey]struct{}{}}
	if recent != nil {
		recent.dedups = append(recent.dedups, d)
	}
	return d
}

// Verdicts on one message's rows (judge).
const (
	keyNew    = iota
	keyOwn    // in the batch being gathered, or earlier in the message
	keyFlight // in the batch being inserted
	keyStored // in a batch committed
)

// errHandBack says a message repeats rows of the batch in flight: it is handed
// back (nak with a delay) and judged again once that batch is settled.
var errHandBack = errors.New("rows of the batch being inserted: handed back until it is settled")

// repeatError says every row of a message was stored already (or is in the
// batch being gathered): the message is acknowledged without entering a batch.
type repeatError struct {
	// rows is the rows repeated, by table.
	rows map[string]int
}

func (e *repeatError) Error() string {
	n := 0
	for _, r := range e.rows {
		n += r
	}
	return fmt.Sprintf("all %d rows of the message were stored already (duplicate_content)", n)
}

// judged is one table's rows of a message: their keys and, once judged, which
// are kept.
type judged struct {
	table string
	keys  []rowKey
	keep  []bool // nil: all kept
	drop  int
}

// judge decides which rows of a message enter the batch (see the type comment).
// With rowLevel (the Loader, which has no intents nor recovery), every repeat is
// dropped row by row instead. The kept rows' keys become the batch's.
func (d *dedup) judge(tables []*judged, rowLevel bool) error {
	verdicts := make([][]int, len(tables))
	inMsg := d.inMsg
	clear(inMsg)
	var fresh, stored, flight int
	for i, t := range tables {
		verdicts[i] = make([]int, len(t.keys))
		for j, k := range t.keys {
			v := d.verdict(k, inMsg)
			verdicts[i][j] = v
			inMsg[k] = struct{}{}
			switch v {
			case keyNew:
				fresh++
			case keyStored:
				stored++
			case keyFlight:
				flight++
			}
		}
	}
	if !rowLevel {
		if flight > 0 {
			return errHandBack
		}
		if fresh == 0 && stored > 0 {
			rep := &repeatError{rows: map[string]int{}}
			for _, t := range tables {
				rep.rows[t.table] += len(t.keys)
			}
			return rep
		}
	}
	for i, t := range tables {
		for j, v := range verdicts[i] {
			drop := v == keyOwn || (rowLevel && v != keyNew)
			if drop {
				if t.keep == nil {
					t.keep = make([]bool, len(t.keys))
					for x := range j {
						t.keep[x] = true
					}
				}
				t.drop++
				continue
			}
			if t.keep != nil {
				t.keep[j] = true
			}
			d.own.add(t.keys[j])
			if d.recent != nil {
				d.recent.seen.add(t.keys[j])
			}
		}
	}
	d.recent.refilter()
	return nil
}

// verdict judges one key; inMsg is the keys of the message's rows before it.
// A key the shared filter has never seen is in none of the large maps.
func (d *dedup) verdict(k rowKey, inMsg map[rowKey]struct{}) int {
	if _, ok := inMsg[k]; ok {
		return keyOwn
	}
	if d.recent != nil && !d.recent.seen.mayHave(k) {
		return keyNew
	}
	if d.own.has(k) {
		return keyOwn
	}
	if d.inflight.has(k) {
		return keyFlight
	}
	if d.recent.has(k) {
		return keyStored
	}
	return keyNew
}

// series hashes the strings naming a series (cluster, node, GPU).
func (d *dedup) series(parts ...string) rowKey {
	var ha, hb maphash.Hash
	ha.SetSeed(keySeedA)
	hb.SetSeed(keySeedB)
	for _, p := range parts {
		ha.WriteString(p)
		ha.WriteByte(0)
		hb.WriteString(p)
		hb.WriteByte(0)
	}
	return rowKey{ha.Sum64(), hb.Sum64()}
}

// row derives a row's key from its series' and its numbers.
func (d *dedup) row(s rowKey, ts int64, pid uint32, proc bool) rowKey {
	x := uint64(ts)*0x9E3779B97F4A7C15 ^ uint64(pid)<<1
	if proc {
		x ^= 1
	}
	return rowKey{mix(s.a ^ x), mix(s.b ^ (x + 0x632BE59BD9B4E019))}
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

// jobEvent is a job event's key: all its fields.
func (d *dedup) jobEvent(e *schemas.JobEvent) rowKey {
	parts := []string{e.Job, e.Event, strconv.FormatInt(e.TimeMs, 10), strconv.FormatUint(uint64(e.Attempt), 10),
		e.Cluster, e.Team, e.Project, e.Queue, e.Pool, e.ModelName, e.Workload, strconv.FormatUint(uint64(e.GPUs), 10),
		e.Card, e.Status, strconv.FormatInt(int64(e.ExitCode), 10), e.RerunOf, e.Source}
	if e.MIGProfile != "" || e.MIGInstances != 0 {
		// Only then: the key of an event of whole GPUs stays what it was.
		parts = append(parts, "mig", e.MIGProfile, strconv.FormatUint(uint64(e.MIGInstances), 10))
	}
	if e.GPUFraction != 0 || e.Sharing != "" {
		parts = append(parts, "fraction", strconv.FormatUint(uint64(e.GPUFraction), 10), e.Sharing)
	}
	parts = append(parts, "nodes")
	parts = append(parts, e.Nodes...)
	parts = append(parts, "gpus")
	parts = append(parts, e.GPUUUIDs...)
	parts = append(parts, "labels")
	for _, k := range slices.Sorted(maps.Keys(e.Labels)) {
		parts = append(parts, k, e.Labels[k])
	}
	return d.series(parts...)
}

// sampleKeys returns the keys of one table's rows of pb: the rows' GPU
// (dictionary references), time deltas and, for process rows, PIDs (nil for GPU
// rows; a column left out reads 0).
func (d *dedup) sampleKeys(pb *wirepb.SampleBatch, uuids []uint32, deltas []int64, pids []uint32, proc bool) []rowKey {
	byRef := map[uint32]rowKey{}
	keys := make([]rowKey, len(uuids))
	ts := int64(0)
	for i, r := range uuids {
		ts += deltas[i]
		s, ok := byRef[r]
		if !ok {
			s = d.series(pb.Cluster, pb.Node, pb.Dict[r])
			byRef[r] = s
		}
		pid := uint32(0)
		if len(pids) > 0 {
			pid = pids[i]
		}
		keys[i] = d.row(s, ts, pid, proc)
	}
	return keys
}

// compact keeps the elements of s that keep marks (a column left out, empty,
// stays empty).
func compact[T any](s []T, keep []bool) []T {
	if len(s) == 0 {
		return s
	}
	j := 0
	for i, v := range s {
		if keep[i] {
			s[j] = v
			j++
		}
	}
	return s[:j]
}

// compactDeltas is compact for a ts_delta_ms column.
func compactDeltas(d []int64, keep []bool) []int64 {
	ts, prev, j := int64(0), int64(0), 0
	for i, v := range d {
		ts += v
		if keep[i] {
			d[j] = ts - prev
			prev = ts
			j++
		}
	}
	return d[:j]
}

func compactGPU(g *wirepb.GPUColumns, keep []bool) {
	g.GpuUuid, g.GpuIndex, g.Model, g.Card = compact(g.GpuUuid, keep), compact(g.GpuIndex, keep), compact(g.Model, keep), compact(g.Card, keep)
	g.MigProfile, g.FbTotalMib, g.FbUsedMib = compact(g.MigProfile, keep), compact(g.FbTotalMib, keep), compact(g.FbUsedMib, keep)
	g.GrEngineActive, g.SmActive, g.SmOccupancy = compact(g.GrEngineActive, keep), compact(g.SmActive, keep), compact(g.SmOccupancy, keep)
	g.TensorActive, g.DramActive, g.GpuUtil = compact(g.TensorActive, keep), compact(g.DramActive, keep), compact(g.GpuUtil, keep)
	g.PcieTxBytesPerS, g.PcieRxBytesPerS, g.PowerW = compact(g.PcieTxBytesPerS, keep), compact(g.PcieRxBytesPerS, keep), compact(g.PowerW, keep)
	g.EnergyMillij, g.TempC, g.Xid = compact(g.EnergyMillij, keep), compact(g.TempC, keep), compact(g.Xid, keep)
	g.ClockEventReasons, g.DriverVersion = compact(g.ClockEventReasons, keep), compact(g.DriverVersion, keep)
	g.TsDeltaMs = compactDeltas(g.TsDeltaMs, keep)
}

func compactProc(p *wirepb.ProcessColumns, keep []bool) {
	p.GpuUuid, p.Pid, p.ProcessName, p.Job = compact(p.GpuUuid, keep), compact(p.Pid, keep), compact(p.ProcessName, keep), compact(p.Job, keep)
	p.FbUsedMib, p.SmUtil, p.MemUtil = compact(p.FbUsedMib, keep), compact(p.SmUtil, keep), compact(p.MemUtil, keep)
	p.TsDeltaMs = compactDeltas(p.TsDeltaMs, keep)
}

// setInflight makes the keys of the batch being inserted count as seen: the
// keys of another dedup sharing d's recent keys (so its filter has them).
func (d *dedup) setInflight(ks *keySet) { d.inflight = ks }

// keys returns the keys of this batch's rows.
func (d *dedup) keys() *keySet { return d.own }

// clearKeys forgets this batch's keys (the batch was not inserted). The set
// is emptied, not replaced: the next batch fills it to about the same size
// without growing it again. Nothing may hold it as its inflight keys by then
// (collectFlush clears those first).
func (d *dedup) clearKeys() { d.own.reset() }

// takeKeys returns this batch's keys, to hand to recent: recent.add copies
// them and empties the set, and the next batch fills it to about the same
// size without growing it again (as after clearKeys, with the same proviso).
func (d *dedup) takeKeys() *keySet { return d.own }
