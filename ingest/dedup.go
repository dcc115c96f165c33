package ingest

import (
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
// content key and stored once:
//
//   - a GPU sample by (cluster, node, gpu_uuid, ts);
//   - a process sample by (cluster, node, gpu_uuid, pid, ts);
//   - a job event by all its fields: a multi-node Slurm job has one start event
//     per node with the same key, time and attempt, differing in nodes and GPUs.
//
// Within a batch every repeat is dropped. Across batches, the keys of the
// batches this process committed are kept (Config.DedupRows, in two
// generations); a row whose key is there, or in the batch being inserted, is
// dropped. Rows dropped are counted in gpupool_ingest_duplicate_rows_total.
// Keys are 128-bit hashes (two seeds), so two different rows never meet in
// practice.
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

// crossBatchDedup turns on the comparison with the batch being inserted and the
// batches committed. It is off: under kill -9 (TestIngestKilledRepeatedly) it
// lost rows in 2 runs of 30 — a whole batch's rows dropped as repeats of a batch
// that was not stored — so only repeats within one batch are dropped until that
// is understood (docs/ingest.md).
const crossBatchDedup = false

func newDedup(recent *recentKeys) *dedup {
	return &dedup{own: keySet{}, recent: recent}
}

// seen reports whether k is a repeat; if not, it takes k as this batch's.
func (d *dedup) seen(k rowKey) bool {
	if _, ok := d.own[k]; ok {
		return true
	}
	if crossBatchDedup {
		if _, ok := d.inflight[k]; ok {
			return true
		}
		if d.recent.has(k) {
			return true
		}
	}
	d.own[k] = struct{}{}
	return false
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

// gpuKeep marks the GPU rows of pb that are new (nil when all are) and returns
// how many are repeats.
func (d *dedup) gpuKeep(pb *wirepb.SampleBatch, keep []bool) ([]bool, int) {
	g := pb.Gpus
	byRef := map[uint32]rowKey{}
	dup := 0
	ts := int64(0)
	for i, r := range g.GpuUuid {
		ts += g.TsDeltaMs[i]
		s, ok := byRef[r]
		if !ok {
			s = d.series(pb.Cluster, pb.Node, pb.Dict[r])
			byRef[r] = s
		}
		if d.seen(d.row(s, ts, 0, false)) {
			if keep == nil {
				keep = make([]bool, len(g.GpuUuid))
				for j := range i {
					keep[j] = true
				}
			}
			dup++
			continue
		}
		if keep != nil {
			keep[i] = true
		}
	}
	return keep, dup
}

// procKeep is gpuKeep for process rows.
func (d *dedup) procKeep(pb *wirepb.SampleBatch, keep []bool) ([]bool, int) {
	p := pb.Processes
	byRef := map[uint32]rowKey{}
	dup := 0
	ts := int64(0)
	for i, r := range p.GpuUuid {
		ts += p.TsDeltaMs[i]
		s, ok := byRef[r]
		if !ok {
			s = d.series(pb.Cluster, pb.Node, pb.Dict[r])
			byRef[r] = s
		}
		pid := uint32(0)
		if len(p.Pid) > 0 {
			pid = p.Pid[i]
		}
		if d.seen(d.row(s, ts, pid, true)) {
			if keep == nil {
				keep = make([]bool, len(p.GpuUuid))
				for j := range i {
					keep[j] = true
				}
			}
			dup++
			continue
		}
		if keep != nil {
			keep[i] = true
		}
	}
	return keep, dup
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
