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

// keySet is the keys of one batch's rows, and the keys of batches committed.
type keySet map[rowKey]struct{}

// recentKeys holds the keys of committed batches: at most limit, in two
// generations (the older one dropped whole when the newer fills).
type recentKeys struct {
	limit     int
	cur, prev keySet
}

func newRecentKeys(limit int) *recentKeys {
	return &recentKeys{limit: limit, cur: keySet{}, prev: keySet{}}
}

func (r *recentKeys) has(k rowKey) bool {
	if r == nil {
		return false
	}
	if _, ok := r.cur[k]; ok {
		return true
	}
	_, ok := r.prev[k]
	return ok
}

// add records the keys of a committed batch.
func (r *recentKeys) add(ks keySet) {
	if r == nil || r.limit <= 0 {
		return
	}
	for k := range ks {
		if len(r.cur) >= r.limit/2 {
			r.prev, r.cur = r.cur, make(keySet, len(r.cur))
		}
		r.cur[k] = struct{}{}
	}
}

// dedup decides which rows of a message are new: not in this batch (own), the
// batch being inserted (inflight) or recent batches.
type dedup struct {
	own      keySet
	inflight keySet
	recent   *recentKeys
}

// keySeedA and keySeedB seed the content keys: one pair per process, so that
// every batch's keys compare.
var keySeedA, keySeedB = maphash.MakeSeed(), maphash.MakeSeed()

func newDedup(recent *recentKeys) *dedup {
	return &dedup{own: keySet{}, recent: recent}
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
	inMsg := keySet{}
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
			d.own[t.keys[j]] = struct{}{}
		}
	}
	return nil
}

// verdict judges one key; inMsg is the keys of the message's rows before it.
func (d *dedup) verdict(k rowKey, inMsg keySet) int {
	if _, ok := inMsg[k]; ok {
		return keyOwn
	}
	if _, ok := d.own[k]; ok {
		return keyOwn
	}
	if _, ok := d.inflight[k]; ok {
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

// setInflight makes the keys of the batch being inserted count as seen.
func (d *dedup) setInflight(ks keySet) { d.inflight = ks }

// keys returns the keys of this batch's rows.
func (d *dedup) keys() keySet { return d.own }

// clearKeys forgets this batch's keys (after they were handed to recent, or the
// batch was not inserted).
func (d *dedup) clearKeys() { d.own = keySet{} }
