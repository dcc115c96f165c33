package ingest

import "github.com/gpupool/gpupool/store"

// activeThreshold is the rollups' fixed activity threshold (migrations 0003 and
// 0013): a process sample with a per-process SM figure is active when its SM or
// memory-bandwidth share is at least 1 %.
const activeThreshold = 0.01

// processMinute is process_minute's rows for one batch: ingest rolls a batch's
// process samples up per (GPU, job, minute) as it inserts them, as the
// materialized view process_minute_mv did inside the engine until migration 0020.
// Aggregating in the engine cost the insert a third of its time (the view's
// GROUP BY runs on the inserting thread, over every row); here it is a pass over
// columns ingest already holds, with the keys as the dictionary indexes of the
// batch's LowCardinality columns. A batch's rows for a key add to another batch's
// in the AggregatingMergeTree, as the view's did, and every reader groups again.
//
// The rollup is a function of the batch's rows alone, so a batch rebuilt after a
// crash (recover) gives the same rows, and its insert under the batch's token for
// process_minute is dropped where the first one landed: exactly once, as for the
// raw tables.
type processMinute struct {
	groups map[minuteKey]int32
	last   minuteKey
	lastAt int32

	blk     *store.Block
	minute  *store.DateTimeCol
	uuid    *store.LowCardinalityStringCol
	job     *store.LowCardinalityStringCol
	cluster *store.LowCardinalityStringCol
	node    *store.LowCardinalityStringCol
	samples *store.UInt64Col
	fbSum   *store.UInt64Col
	fbMax   *store.UInt32Col
	smSum   *store.Float64Col
	smN     *store.UInt64Col
	memSum  *store.Float64Col
	memN    *store.UInt64Col
	judged  *store.UInt64Col
	activeN *store.UInt64Col
}

type minuteKey struct {
	uuid, job uint32
	minute    int64 // seconds since the epoch, at the start of the minute
}

func newProcessMinute() *processMinute {
	r := &processMinute{
		groups:  map[minuteKey]int32{},
		lastAt:  -1,
		minute:  store.NewDateTime("minute"),
		uuid:    store.NewLowCardinalityString("gpu_uuid"),
		job:     store.NewLowCardinalityString("job"),
		cluster: store.NewLowCardinalityString("cluster"),
		node:    store.NewLowCardinalityString("node"),
		samples: store.NewUInt64("samples"),
		fbSum:   store.NewUInt64("fb_used_mib_sum"),
		fbMax:   store.NewUInt32("fb_used_mib_max"),
		smSum:   store.NewFloat64("sm_util_sum"),
		smN:     store.NewUInt64("sm_util_samples"),
		memSum:  store.NewFloat64("mem_util_sum"),
		memN:    store.NewUInt64("mem_util_samples"),
		judged:  store.NewUInt64("judged_samples"),
		activeN: store.NewUInt64("active_samples"),
	}
	r.blk = store.NewBlock(r.minute, r.uuid, r.job, r.cluster, r.node, r.samples, r.fbSum, r.fbMax,
		r.smSum, r.smN, r.memSum, r.memN, r.judged, r.activeN)
	return r
}

// build replaces the rollup's rows with those of the process block's columns.
// Groups come out in the order their first row came in (deterministic, so a
// rebuilt batch is the same block); within a group the sums run in row order, as
// the view's did.
func (r *processMinute) build(s *sampleSink) *store.Block {
	r.blk.Reset()
	clear(r.groups)
	r.lastAt = -1
	n := s.pTS.Len()
	for i := 0; i < n; i++ {
		ms := s.pTS.Data[i]
		k := minuteKey{uuid: s.pUUID.IndexAt(i), job: s.pJob.IndexAt(i), minute: floorDiv(ms, 60_000) * 60}
		g := r.lastAt
		if g < 0 || k != r.last {
			var ok bool
			g, ok = r.groups[k]
			if !ok {
				g = int32(r.samples.Len())
				r.groups[k] = g
				r.minute.Append(uint32(k.minute))
				r.uuid.Append(s.pUUID.KeyAt(i))
				r.job.Append(s.pJob.KeyAt(i))
				r.cluster.Append(s.pCluster.KeyAt(i))
				r.node.Append(s.pNode.KeyAt(i))
				r.samples.Append(0)
				r.fbSum.Append(0)
				r.fbMax.Append(0)
				r.smSum.Append(0)
				r.smN.Append(0)
				r.memSum.Append(0)
				r.memN.Append(0)
				r.judged.Append(0)
				r.activeN.Append(0)
			}
			r.last, r.lastAt = k, g
		}
		fb := s.pFBUsed.Data[i]
		r.samples.Data[g]++
		r.fbSum.Data[g] += uint64(fb)
		r.fbMax.Data[g] = max(r.fbMax.Data[g], fb)
		sm, mem := s.pSM.Data[i], s.pMem.Data[i]
		smOK, memOK := sm == sm, mem == mem // NaN is NULL
		if smOK {
			r.smSum.Data[g] += float64(sm)
			r.smN.Data[g]++
			r.judged.Data[g]++
			// greatest(ifNull(sm_util, 0), ifNull(mem_util, 0)) >= 0.01
			busy := sm
			if !memOK {
				mem = 0
			}
			busy = max(busy, mem)
			if float64(busy) >= activeThreshold {
				r.activeN.Data[g]++
			}
		}
		if memOK {
			r.memSum.Data[g] += float64(mem)
			r.memN.Data[g]++
		}
	}
	return r.blk
}

// floorDiv is a / b rounded down (toStartOfMinute before 1970 too).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
