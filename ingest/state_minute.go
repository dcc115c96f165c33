package ingest

import (
	"math"

	"github.com/gpupool/gpupool/store"
)

// stateMinute is gpu_state_minute's rows for one batch (migration 0027): each
// GPU's figures per minute that the fleet page's state now needs, rolled up from
// the batch's GPU samples as gpuRollup rolls up gpu_minute, and inserted under the
// batch's token for the table. Each aggregate is the one gpu_state_between
// computes from the raw samples (schemas/views/gpu_state.tmpl), term for term:
// NULL is NaN in the block's columns, sums are of Float32 values widened to
// Float64, and a string's greatest is by bytes, as the engine compares.
type stateMinute struct {
	groups groupIndex[periodKey]

	blk      *store.Block
	minute   *store.DateTimeCol
	uuid     *store.LowCardinalityStringCol
	index    *store.UInt16Col
	model    *store.LowCardinalityStringCol
	driver   *store.LowCardinalityStringCol
	fbTotal  *store.UInt32Col
	fbMax    *store.UInt32Col
	actSum   *store.Float64Col
	actN     *store.UInt64Col
	powSum   *store.Float64Col
	powN     *store.UInt64Col
	tempMax  *store.NullableFloat32Col
	xidMax   *store.UInt32Col
	lastTS   *store.DateTime64MsCol
	drivers  []string // each group's greatest driver version so far
	firstRow []int    // each group's first row, for its any() columns
	// zeros are the columns a new group starts at 0.
	zeros32 []*store.UInt32Col
	zeros64 []*store.UInt64Col
	sums    []*store.Float64Col
}

func newStateMinute() *stateMinute {
	r := &stateMinute{
		minute:  store.NewDateTime("minute"),
		uuid:    store.NewLowCardinalityString("gpu_uuid"),
		index:   store.NewUInt16("gpu_index"),
		model:   store.NewLowCardinalityString("model"),
		driver:  store.NewLowCardinalityString("driver_version"),
		fbTotal: store.NewUInt32("fb_total_mib"),
		fbMax:   store.NewUInt32("fb_used_mib_max"),
		actSum:  store.NewFloat64("activity_sum"),
		actN:    store.NewUInt64("activity_samples"),
		powSum:  store.NewFloat64("power_w_sum"),
		powN:    store.NewUInt64("power_samples"),
		tempMax: store.NewNullableFloat32("temp_c_max"),
		xidMax:  store.NewUInt32("xid_max"),
		lastTS:  store.NewDateTime64Ms("last_ts"),
	}
	r.blk = store.NewBlock(r.minute, r.uuid, r.index, r.model, r.driver, r.fbTotal, r.fbMax, r.actSum, r.actN,
		r.powSum, r.powN, r.tempMax, r.xidMax, r.lastTS)
	r.zeros32 = []*store.UInt32Col{r.fbTotal, r.fbMax, r.xidMax}
	r.zeros64 = []*store.UInt64Col{r.actN, r.powN}
	r.sums = []*store.Float64Col{r.actSum, r.powSum}
	return r
}

// build replaces the rows with those of the sink's GPU block, groups in the order
// their first row came in.
func (r *stateMinute) build(s *sampleSink) *store.Block {
	r.blk.Reset()
	r.groups.reset()
	r.drivers, r.firstRow = r.drivers[:0], r.firstRow[:0]
	for i := range s.gTS.Len() {
		ts := s.gTS.Data[i]
		k := periodKey{uuid: s.gUUID.IndexAt(i), start: floorDiv(ts, 60_000) * 60}
		g, first := r.groups.of(k)
		if first {
			r.minute.Append(uint32(k.start))
			r.uuid.Append(s.gUUID.KeyAt(i))
			r.drivers = append(r.drivers, s.gDriver.KeyAt(i))
			r.firstRow = append(r.firstRow, i)
			for _, c := range r.zeros32 {
				c.Append(0)
			}
			for _, c := range r.zeros64 {
				c.Append(0)
			}
			for _, c := range r.sums {
				c.Append(0)
			}
			r.tempMax.Append(float32(math.NaN()))
			r.lastTS.Append(ts)
		}
		r.drivers[g] = max(r.drivers[g], s.gDriver.KeyAt(i))
		r.fbTotal.Data[g] = max(r.fbTotal.Data[g], s.gFBTotal.Data[i])
		r.fbMax.Data[g] = max(r.fbMax.Data[g], s.gFBUsed.Data[i])
		// coalesce(sm_active, gr_engine_active, gpu_util), as the fleet page's
		// activity has always been.
		act := s.gSM.Data[i]
		if act != act {
			act = s.gGr.Data[i]
		}
		if act != act {
			act = s.gUtil.Data[i]
		}
		addMean(r.actSum, r.actN, g, act)
		addMean(r.powSum, r.powN, g, s.gPower.Data[i])
		if t := s.gTemp.Data[i]; t == t && (r.tempMax.Data[g] != r.tempMax.Data[g] || t > r.tempMax.Data[g]) {
			r.tempMax.Data[g] = t
		}
		r.xidMax.Data[g] = max(r.xidMax.Data[g], s.gXID.Data[i])
		r.lastTS.Data[g] = max(r.lastTS.Data[g], ts)
	}
	for g, i := range r.firstRow {
		r.index.Append(s.gIndex.Data[i])
		r.model.Append(s.gModel.KeyAt(i))
		r.driver.Append(r.drivers[g])
	}
	return r.blk
}
