package ingest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

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
	groups groupIndex[minuteKey]

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
	// times is sample_times (migration 0022): the key's distinct sample times,
	// counted as its rows come in while each key's times only rise (lastMs is
	// each group's latest), and again with a set where they do not.
	times    *store.UInt64Col
	lastMs   []int64
	lastNode []uint32
}

type minuteKey struct {
	uuid, job uint32
	minute    int64 // seconds since the epoch, at the start of the minute
}

func newProcessMinute() *processMinute {
	r := &processMinute{
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
		times:   store.NewUInt64("sample_times"),
	}
	r.blk = store.NewBlock(r.minute, r.uuid, r.job, r.cluster, r.node, r.samples, r.fbSum, r.fbMax,
		r.smSum, r.smN, r.memSum, r.memN, r.judged, r.activeN, r.times)
	return r
}

// build replaces the rollup's rows with those of the process block's columns.
// Groups come out in the order their first row came in (deterministic, so a
// rebuilt batch is the same block); within a group the sums run in row order, as
// the view's did. sample_times is uniqExact(node, ts) per key (a GPU reports from
// one node: its distinct sample times; per node, so that the count adds up across
// batches even where two nodes report one UUID): counted in the pass while every
// key's rows come in time order from one node at a time (a message is a node's
// tick), recounted with a set when they do not.
func (r *processMinute) build(s *sampleSink) *store.Block {
	r.blk.Reset()
	r.groups.reset()
	r.lastMs, r.lastNode = r.lastMs[:0], r.lastNode[:0]
	unordered := false
	n := s.pTS.Len()
	for i := 0; i < n; i++ {
		ms := s.pTS.Data[i]
		k := minuteKey{uuid: s.pUUID.IndexAt(i), job: s.pJob.IndexAt(i), minute: floorDiv(ms, 60_000) * 60}
		g, first := r.groups.of(k)
		if first {
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
			r.times.Append(0)
			r.lastMs, r.lastNode = append(r.lastMs, math.MinInt64), append(r.lastNode, 0)
		}
		if nd := s.pNode.IndexAt(i); ms > r.lastMs[g] || (ms == r.lastMs[g] && nd != r.lastNode[g]) {
			unordered = unordered || ms == r.lastMs[g] // another node's rows at the time: a set decides
			r.times.Data[g]++
			r.lastMs[g], r.lastNode[g] = ms, nd
		} else if ms < r.lastMs[g] {
			unordered = true
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
	if unordered {
		r.recountTimes(s)
	}
	return r.blk
}

// recountTimes counts sample_times with a set of (group, node, time): for a batch
// in which some key's rows do not come in time order, or come from two nodes.
func (r *processMinute) recountTimes(s *sampleSink) {
	clear(r.times.Data)
	seen := make(map[[3]int64]struct{}, len(r.times.Data))
	for i := range s.pTS.Len() {
		ms := s.pTS.Data[i]
		g, _ := r.groups.of(minuteKey{uuid: s.pUUID.IndexAt(i), job: s.pJob.IndexAt(i), minute: floorDiv(ms, 60_000) * 60})
		k := [3]int64{int64(g), int64(s.pNode.IndexAt(i)), ms}
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			r.times.Data[g]++
		}
	}
}

// groupIndex numbers a batch's groups from 0 in the order their first row came in,
// so a rebuilt batch gives the same block. A group's rows mostly come together, so
// the last key is compared before the map is looked in.
type groupIndex[K comparable] struct {
	groups map[K]int32
	last   K
	lastAt int32 // -1: no last key
}

func (x *groupIndex[K]) reset() {
	if x.groups == nil {
		x.groups = map[K]int32{}
	}
	clear(x.groups)
	x.lastAt = -1
}

// of returns k's group, and whether k is new: its group is then the next number.
func (x *groupIndex[K]) of(k K) (g int32, first bool) {
	if x.lastAt >= 0 && k == x.last {
		return x.lastAt, false
	}
	g, ok := x.groups[k]
	if !ok {
		g = int32(len(x.groups))
		x.groups[k] = g
	}
	x.last, x.lastAt = k, g
	return g, !ok
}

// floorDiv is a / b rounded down (toStartOfMinute before 1970 too).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// pcieActiveBytesPerS is the rollups' fixed PCIe threshold (migration 0003): a
// GPU sample moving at least this much over PCIe is active (a data loader works).
const pcieActiveBytesPerS = 100_000_000

// gpuRollup is gpu_minute's or gpu_hour's rows for one batch: ingest rolls a
// batch's GPU samples up per (GPU, period) as it inserts them, as the materialized
// views gpu_minute_mv and gpu_hour_mv did inside the engine until migration 0021,
// for the reasons and with the guarantees of processMinute: the same rows from the
// same batch, inserted under the batch's token for the rollup's table.
type gpuRollup struct {
	table  string
	period int64 // seconds: 60 for gpu_minute, 3600 for gpu_hour
	groups groupIndex[periodKey]

	blk      *store.Block
	start    *store.DateTimeCol
	uuid     *store.LowCardinalityStringCol
	cluster  *store.LowCardinalityStringCol
	node     *store.LowCardinalityStringCol
	card     *store.LowCardinalityStringCol
	mig      *store.LowCardinalityStringCol
	samples  *store.UInt64Col
	measured *store.UInt64Col
	active   *store.UInt64Col
	grSum    *store.Float64Col
	grN      *store.UInt64Col
	smSum    *store.Float64Col
	smN      *store.UInt64Col
	tensSum  *store.Float64Col
	tensN    *store.UInt64Col
	dramSum  *store.Float64Col
	dramN    *store.UInt64Col
	fbMax    *store.UInt32Col
	fbSum    *store.UInt64Col
	powSum   *store.Float64Col
	powN     *store.UInt64Col
	enMin    *store.UInt64Col
	enMax    *store.UInt64Col
	xidN     *store.UInt64Col
	// counts and sums are the columns a new group starts at 0.
	counts []*store.UInt64Col
	sums   []*store.Float64Col
}

type periodKey struct {
	uuid  uint32
	start int64 // seconds since the epoch, at the start of the period
}

// newGPURollup returns the rollup into table, whose time column is timeCol and
// whose period is period seconds.
func newGPURollup(table, timeCol string, period int64) *gpuRollup {
	r := &gpuRollup{
		table:    table,
		period:   period,
		start:    store.NewDateTime(timeCol),
		uuid:     store.NewLowCardinalityString("gpu_uuid"),
		cluster:  store.NewLowCardinalityString("cluster"),
		node:     store.NewLowCardinalityString("node"),
		card:     store.NewLowCardinalityString("card"),
		mig:      store.NewLowCardinalityString("mig_profile"),
		samples:  store.NewUInt64("samples"),
		measured: store.NewUInt64("activity_samples"),
		active:   store.NewUInt64("active_samples"),
		grSum:    store.NewFloat64("gr_engine_active_sum"),
		grN:      store.NewUInt64("gr_engine_active_samples"),
		smSum:    store.NewFloat64("sm_active_sum"),
		smN:      store.NewUInt64("sm_active_samples"),
		tensSum:  store.NewFloat64("tensor_active_sum"),
		tensN:    store.NewUInt64("tensor_active_samples"),
		dramSum:  store.NewFloat64("dram_active_sum"),
		dramN:    store.NewUInt64("dram_active_samples"),
		fbMax:    store.NewUInt32("fb_used_mib_max"),
		fbSum:    store.NewUInt64("fb_used_mib_sum"),
		powSum:   store.NewFloat64("power_w_sum"),
		powN:     store.NewUInt64("power_samples"),
		enMin:    store.NewUInt64("energy_mj_min"),
		enMax:    store.NewUInt64("energy_mj_max"),
		xidN:     store.NewUInt64("xid_samples"),
	}
	r.blk = store.NewBlock(r.start, r.uuid, r.cluster, r.node, r.card, r.mig, r.samples, r.measured, r.active,
		r.grSum, r.grN, r.smSum, r.smN, r.tensSum, r.tensN, r.dramSum, r.dramN, r.fbMax, r.fbSum,
		r.powSum, r.powN, r.enMin, r.enMax, r.xidN)
	r.counts = []*store.UInt64Col{r.samples, r.measured, r.active, r.grN, r.smN, r.tensN, r.dramN, r.fbSum,
		r.powN, r.xidN, r.enMax}
	r.sums = []*store.Float64Col{r.grSum, r.smSum, r.tensSum, r.dramSum, r.powSum}
	return r
}

// build replaces the rollup's rows with those of the GPU block's columns, groups in
// the order their first row came in. Each aggregate is the view's, term for term
// (migration 0003): NULL is NaN in the block's columns, and a Float32 is widened to
// Float64 before it is summed or compared, as the engine does.
func (r *gpuRollup) build(s *sampleSink) *store.Block {
	r.blk.Reset()
	r.groups.reset()
	n := s.gTS.Len()
	periodMs := r.period * 1000
	for i := 0; i < n; i++ {
		k := periodKey{uuid: s.gUUID.IndexAt(i), start: floorDiv(s.gTS.Data[i], periodMs) * r.period}
		g, first := r.groups.of(k)
		if first {
			r.start.Append(uint32(k.start))
			r.uuid.Append(s.gUUID.KeyAt(i))
			r.cluster.Append(s.gCluster.KeyAt(i))
			r.node.Append(s.gNode.KeyAt(i))
			r.card.Append(s.gCard.KeyAt(i))
			r.mig.Append(s.gMIG.KeyAt(i))
			for _, c := range r.counts {
				c.Append(0)
			}
			for _, c := range r.sums {
				c.Append(0)
			}
			r.fbMax.Append(0)
			r.enMin.Append(s.gEnergy.Data[i])
		}
		r.samples.Data[g]++
		// coalesce(gr_engine_active, gpu_util): the engine's activity, or NVML's
		// utilisation where a node has no profiling fields.
		gr, util, dram := s.gGr.Data[i], s.gUtil.Data[i], s.gDRAM.Data[i]
		activity := gr
		if gr != gr {
			activity = util
		}
		if activity == activity {
			r.measured.Data[g]++
			tx, rx := s.gPCIeTx.Data[i], s.gPCIeRx.Data[i]
			if float64(activity) >= activeThreshold || float64(zeroNull(dram)) >= activeThreshold ||
				float64(zeroNull(tx))+float64(zeroNull(rx)) >= pcieActiveBytesPerS {
				r.active.Data[g]++
			}
		}
		addMean(r.grSum, r.grN, g, gr)
		addMean(r.smSum, r.smN, g, s.gSM.Data[i])
		addMean(r.tensSum, r.tensN, g, s.gTensor.Data[i])
		addMean(r.dramSum, r.dramN, g, dram)
		addMean(r.powSum, r.powN, g, s.gPower.Data[i])
		fb := s.gFBUsed.Data[i]
		r.fbMax.Data[g] = max(r.fbMax.Data[g], fb)
		r.fbSum.Data[g] += uint64(fb)
		e := s.gEnergy.Data[i]
		r.enMin.Data[g] = min(r.enMin.Data[g], e)
		r.enMax.Data[g] = max(r.enMax.Data[g], e)
		if s.gXID.Data[i] != 0 {
			r.xidN.Data[g]++
		}
	}
	return r.blk
}

// zeroNull is ifNull(v, 0) for a NaN-as-NULL value.
func zeroNull(v float32) float32 {
	if v != v {
		return 0
	}
	return v
}

// addMean adds v to group g's sum(toFloat64(ifNull(v, 0))) and count(v), unless v
// is NULL.
func addMean(sum *store.Float64Col, count *store.UInt64Col, g int32, v float32) {
	if v != v {
		return
	}
	sum.Data[g] += float64(v)
	count.Data[g]++
}

// rolledUp are the rollups ingest writes, with the view that wrote each before
// (migrations 0020 and 0021), the raw table it reads, and the columns added since
// the view was dropped (their expressions, appended to the view's select in the
// table's order: ProcessMinuteAdded).
var rolledUp = []struct{ table, view, raw, added string }{
	{"gpu_minute", "gpu_minute_mv", "gpu_samples", ""},
	{"gpu_hour", "gpu_hour_mv", "gpu_samples", ""},
	{"process_minute", "process_minute_mv", "process_samples", ProcessMinuteAdded},
}

// ProcessMinuteAdded is process_minute's columns added after its view was dropped,
// as the view would have computed them: sample_times (migration 0022).
// (The raw table's node, not the view's any(node) AS node.)
const ProcessMinuteAdded = ",\n    uniqExact(process_samples.node, ts) AS sample_times"

// RollUpLoaded writes the rollups of samples that reached the raw tables without
// ingest — an SQL backfill, a benchmark's generated fleet — with ts in [from, to):
// the views' queries of the migrations over those samples, so the rows are the ones
// ingest would have written. Samples ingest stored are rolled up already; rolling
// them up again counts them twice.
func RollUpLoaded(ctx context.Context, s store.Store, from, to time.Time) error {
	// Rendered for a single server: on a cluster the raw tables and the rollups are
	// then the Distributed ones, read and written across every shard.
	p := schemas.MigrationParams{DB: s.Database(), RawTTLDays: 1}
	for _, r := range rolledUp {
		q, err := schemas.ViewQuery(p, r.view)
		if err != nil {
			return err
		}
		raw := p.DB + "." + r.raw
		if strings.Count(q, "FROM "+raw+"\n") != 1 {
			return fmt.Errorf("roll up %s: the view's query does not read %s once", r.table, raw)
		}
		q = strings.Replace(q, "\nFROM "+raw+"\n", r.added+"\nFROM "+raw+"\n", 1)
		q = strings.Replace(q, "FROM "+raw+"\n", "FROM (SELECT * FROM "+raw+
			" WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}) AS "+r.raw+"\n", 1)
		err = s.Exec(ctx, "INSERT INTO "+p.DB+"."+r.table+" "+q, store.Params{
			"from": from.UTC().Format("2006-01-02 15:04:05.000"), "to": to.UTC().Format("2006-01-02 15:04:05.000")})
		if err != nil {
			return fmt.Errorf("roll up %s: %w", r.table, err)
		}
	}
	if err := s.Exec(ctx, schemas.GPUStateMinuteSQL(p.DB), store.Params{
		"from": from.UTC().Format("2006-01-02 15:04:05.000"), "to": to.UTC().Format("2006-01-02 15:04:05.000")}); err != nil {
		return fmt.Errorf("roll up gpu_state_minute: %w", err)
	}
	return nil
}
