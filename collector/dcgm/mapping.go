package dcgm

import (
	"math"

	"github.com/gpupool/gpupool/schemas"
)

// DCGM's blank values (dcgm_structs.h): a field with no value holds one of four
// values just below the type's maximum — blank, not found, not supported, not
// permissioned, in that order.
const (
	int32Blank = 0x7ffffff0
	int64Blank = 0x7ffffffffffffff0
	fp64Blank  = 140737488355328.0 // 2^47
	strBlank   = "<<<NULL>>>"

	// statusNotSupported is DCGM_ST_NOT_SUPPORTED as a value's status.
	statusNotSupported = -6
)

// reading is what a value says once DCGM's sentinels are decoded.
type reading uint8

const (
	readingOK           reading = iota
	readingAbsent               // not watched, or not returned
	readingBlank                // blank or not found: no value this time
	readingUnsupported          // DCGM_*_NOT_SUPPORTED or status NOT_SUPPORTED
	readingNoPermission         // DCGM_*_NOT_PERMISSIONED
	readingError                // another non-zero status
	readingStale                // older than Config.MaxKeepAge
	readingInvalid              // NaN, infinite or negative
)

// sentinel decodes the 4-value sentinel window starting at blank.
func sentinel(offset int64) reading {
	switch offset {
	case 2:
		return readingUnsupported
	case 3:
		return readingNoPermission
	}
	return readingBlank
}

// number returns a numeric value of field spec, or why there is none.
func number(v value, spec *fieldSpec) (float64, reading) {
	if v.Status == statusNotSupported {
		return 0, readingUnsupported
	}
	if v.Status != 0 {
		return 0, readingError
	}
	var n float64
	switch v.Type {
	case typeInt64, typeTimestamp:
		if v.Int >= int64Blank {
			return 0, sentinel(v.Int - int64Blank)
		}
		if spec.Unit.small() && v.Int >= int32Blank && v.Int <= int32Blank+3 {
			return 0, sentinel(v.Int - int32Blank)
		}
		n = float64(v.Int)
	case typeDouble:
		if v.Float >= fp64Blank && v.Float <= fp64Blank+3 {
			return 0, sentinel(int64(v.Float - fp64Blank))
		}
		n = v.Float
	default:
		return 0, readingInvalid
	}
	if math.IsNaN(n) || math.IsInf(n, 0) || n < 0 || n >= fp64Blank {
		return 0, readingInvalid
	}
	return n, readingOK
}

// text returns a string value, or why there is none.
func text(v value) (string, reading) {
	if v.Status == statusNotSupported {
		return "", readingUnsupported
	}
	if v.Status != 0 {
		return "", readingError
	}
	if v.Type != typeString {
		return "", readingInvalid
	}
	switch v.Str {
	case strBlank, "<<<NOT_FOUND>>>", "":
		return "", readingBlank
	case "<<<NOT_SUPPORTED>>>":
		return "", readingUnsupported
	case "<<<NOT_PERMISSIONED>>>":
		return "", readingNoPermission
	}
	return v.Str, readingOK
}

// readings holds the latest value of every known field of one entity, indexed like
// fieldSpecs.
type readings struct {
	vals [numSpecs]value
	have specSet
}

func (r *readings) set(i int, v value) {
	r.vals[i] = v
	r.have.add(i)
}

// mapper turns readings into columns.
type mapper struct {
	// staleMicros: a value sampled longer ago than this is stale (0: never).
	staleMicros int64
}

// column returns a column's value in the column's unit from the first of its fields
// r has a reading for, and the reading of the best field tried. The XID and ECC
// counters never go stale: DCGM updates them when they change, and their last
// value is still the count.
func (m mapper) column(r *readings, c column, atMicros int64) (float64, reading) {
	best := readingAbsent
	if r == nil {
		return 0, best
	}
	for _, i := range columnSpecs[c] {
		if !r.have.has(i) {
			continue
		}
		spec := &fieldSpecs[i]
		v := r.vals[i]
		n, rd := number(v, spec)
		if rd == readingOK && m.staleMicros > 0 && c != colXID && c != colECCSBE && c != colECCDBE && v.TSMicros > 0 && atMicros-v.TSMicros > m.staleMicros {
			rd = readingStale
		}
		if rd == readingOK {
			return n * spec.Unit.scale(), readingOK
		}
		if best == readingAbsent || rd == readingUnsupported {
			best = rd
		}
	}
	return 0, best
}

// ratio returns a 0..1 column, Missing when not reported. Profiling ratios can
// exceed 1 by rounding; they are clamped.
func (m mapper) ratio(r *readings, c column, at int64, st *columnStates) float32 {
	n, rd := m.column(r, c, at)
	st[c] = rd
	if rd != readingOK {
		return schemas.Missing
	}
	return float32(min(n, 1))
}

func (m mapper) float(r *readings, c column, at int64, st *columnStates, share float64) float32 {
	n, rd := m.column(r, c, at)
	st[c] = rd
	if rd != readingOK {
		return schemas.Missing
	}
	return float32(n * share)
}

func (m mapper) uint(r *readings, c column, at int64, st *columnStates, share float64) (uint64, bool) {
	n, rd := m.column(r, c, at)
	st[c] = rd
	if rd != readingOK {
		return 0, false
	}
	return uint64(n * share), true
}

// columnStates records, per column, what the last mapping read.
type columnStates [numColumns]reading

// mapUnit fills out (a NewGPUSample with time and identity set) from a unit's
// readings. own holds the unit's entity (the GPU, or the MIG GPU instance); parent
// the physical GPU's for a MIG instance, nil otherwise. A MIG instance takes its
// memory and activity from own, and temperature, clock events and its share of
// power and energy from parent; DCGM has no GPU utilisation or PCIe traffic per
// instance.
func (m mapper) mapUnit(u *unit, own, parent *readings, at int64, out *schemas.GPUSample, st *columnStates) {
	out.GrEngineActive = m.ratio(own, colGrEngineActive, at, st)
	out.SMActive = m.ratio(own, colSMActive, at, st)
	out.SMOccupancy = m.ratio(own, colSMOccupancy, at, st)
	out.TensorActive = m.ratio(own, colTensorActive, at, st)
	out.DRAMActive = m.ratio(own, colDRAMActive, at, st)

	out.FBTotalMiB = u.FBTotalMiB
	if n, ok := m.uint(own, colFBTotal, at, st, 1); ok && n > 0 {
		out.FBTotalMiB = uint32(min(n, math.MaxUint32))
	}
	if n, ok := m.uint(own, colFBUsed, at, st, 1); ok {
		out.FBUsedMiB = uint32(min(n, math.MaxUint32))
	}

	whole, share := own, 1.0
	if u.MIG {
		whole, share = parent, u.Share
		st[colGPUUtil], st[colPCIeTx], st[colPCIeRx] = readingUnsupported, readingUnsupported, readingUnsupported
	} else {
		out.GPUUtil = m.ratio(own, colGPUUtil, at, st)
		out.PCIeTxBytesPerS = m.float(own, colPCIeTx, at, st, 1)
		out.PCIeRxBytesPerS = m.float(own, colPCIeRx, at, st, 1)
	}
	out.PowerW = m.float(whole, colPower, at, st, share)
	if n, ok := m.uint(whole, colEnergy, at, st, share); ok {
		out.EnergyMilliJ = n
	}
	out.TempC = m.float(whole, colTemp, at, st, 1)
	if n, ok := m.uint(whole, colClockEventReasons, at, st, 1); ok {
		out.ClockEventReasons = n
	}
	// ECC counters are the card's: a MIG instance carries its parent's, whole
	// (an error on the card may have hit any instance's memory).
	if n, ok := m.uint(whole, colECCSBE, at, st, 1); ok {
		out.ECCCorrectedVolatile = n
	}
	if n, ok := m.uint(whole, colECCDBE, at, st, 1); ok {
		out.ECCUncorrectedVolatile = n
	}
	// XID is filled by the XID tracker: the field holds the last XID ever seen,
	// not one per tick. Its state here only feeds the field_supported gauge.
	_, st[colXID] = m.column(whole, colXID, at)
	if st[colXID] == readingBlank {
		st[colXID] = readingOK // watched, no XID yet
	}
}
