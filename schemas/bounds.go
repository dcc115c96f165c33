package schemas

import (
	"fmt"
	"math"
	"strconv"
)

// Bound is the physical range of one measurement: what no GPU can report. A value
// outside it is a broken sensor or a hostile producer, not data, and must not be
// billed or averaged: ingest dead-letters the batch naming the field, the trace
// reader refuses the line.
type Bound struct {
	Field    string
	Min, Max float64
	// Why says where the limit comes from (docs/data-model.md lists them).
	Why string
}

// Bounds of a GPU sample's measurements (ratios are 0..1 and checked apart).
var (
	BoundPowerW = Bound{"power_w", 0, 5000, "the largest accelerator modules draw about 2.7 kW"}
	BoundTempC  = Bound{"temp_c", -40, 150, "GPUs shut down near 100-110 °C; -40 °C is the coldest rated ambient"}
	BoundPCIeTx = Bound{"pcie_tx_bytes_per_s", 0, 1e12, "PCIe 6.0 x16 moves 128 GB/s each way"}
	BoundPCIeRx = Bound{"pcie_rx_bytes_per_s", 0, 1e12, "PCIe 6.0 x16 moves 128 GB/s each way"}
	// BoundFBTotalMiB bounds a GPU's memory: 4 TiB, ten times the largest today.
	BoundFBTotalMiB = Bound{"fb_total_mib", 0, 4 << 20, "the largest GPUs hold under 300 GiB"}
)

// MaxGPUIndex is the largest gpu_index (BoundGPUIndex) and MaxEnergyMilliJ the
// largest energy counter (BoundEnergyMilliJ), as integers for the checks made
// before a value is narrowed.
const (
	MaxGPUIndex     = math.MaxUint16
	MaxEnergyMilliJ = 1 << 53
)

// Bounds of a sample's indices and counters, checked before they are narrowed to
// their column's type or summed.
var (
	// BoundGPUIndex: gpu_index is stored as UInt16; a larger index would be cut
	// to another GPU's.
	BoundGPUIndex = Bound{"gpu_index", 0, MaxGPUIndex, "stored as UInt16; no node has 65,536 GPUs or MIG instances"}
	// BoundEnergyMilliJ bounds the energy counter (mJ since the driver loaded):
	// 2⁵³ mJ is 5 kW for 57 years. A counter at 2⁶⁴−1 is a sentinel or a wrapped
	// subtraction, not energy.
	BoundEnergyMilliJ = Bound{"energy_mj", 0, MaxEnergyMilliJ, "2^53 mJ is 5 kW drawn for 57 years since the driver loaded"}
	// BoundProcessFBMiB bounds a process's memory where its GPU's total is not in
	// the same batch: no process holds more than a GPU can.
	BoundProcessFBMiB = Bound{"fb_used_mib", 0, BoundFBTotalMiB.Max, "a process holds at most its GPU's memory"}
)

// EnergySlackMs is the time added to the interval between two samples of one GPU
// when their energy counters are compared: the counter and the timestamp are read
// at slightly different moments.
const EnergySlackMs = 1000

// PhysicalBounds lists the bounds, for documentation and tests.
var PhysicalBounds = []Bound{BoundPowerW, BoundTempC, BoundPCIeTx, BoundPCIeRx, BoundFBTotalMiB,
	BoundGPUIndex, BoundEnergyMilliJ, BoundProcessFBMiB}

// EnergyStepReason says why a GPU's energy counter cannot have gone from prev
// at prevMs to cur at curMs ("" when it can): it may fall (the driver reloaded
// and the counter restarted), but it may rise by at most BoundPowerW.Max over the
// interval plus EnergySlackMs. Zero on either side is "not reported".
func EnergyStepReason(prev uint64, prevMs int64, cur uint64, curMs int64) string {
	if prev == 0 || cur == 0 || cur <= prev {
		return ""
	}
	dt := curMs - prevMs
	if dt < 0 {
		dt = -dt
	}
	limit := BoundPowerW.Max * float64(dt+EnergySlackMs) // W × ms = mJ
	if float64(cur-prev) > limit {
		return fmt.Sprintf("energy_mj: rose by %d mJ in %d ms, more than %g W could draw (%s)", cur-prev, dt, BoundPowerW.Max, BoundPowerW.Field)
	}
	return ""
}

// ProcessMemoryReason says why a process cannot hold used MiB on a GPU of
// gpuTotal MiB ("" when it can; gpuTotal 0 is unknown and checks only
// BoundProcessFBMiB).
func ProcessMemoryReason(used, gpuTotal uint32) string {
	if gpuTotal > 0 && used > gpuTotal {
		return fmt.Sprintf("fb_used_mib: %d exceeds its GPU's fb_total_mib %d", used, gpuTotal)
	}
	return BoundProcessFBMiB.Reason(float64(used))
}

// Reason returns why v is outside b ("power_w: 1e+30 is outside 0..5000"), or ""
// for a value within it or a Missing one.
func (b Bound) Reason(v float64) string {
	if math.IsNaN(v) || IsMissing(float32(v)) {
		return ""
	}
	if v < b.Min || v > b.Max || math.IsInf(v, 0) {
		// Samples are float32: print what was sent, not its float64 widening.
		return fmt.Sprintf("%s: %s is outside %g..%g", b.Field, strconv.FormatFloat(v, 'g', -1, 32), b.Min, b.Max)
	}
	return ""
}

// checkBound wraps Reason for a batch's row.
func checkBound(kind string, i int, b Bound, v float64) error {
	if r := b.Reason(v); r != "" {
		return fmt.Errorf("%w: %s row %d: %s", ErrInvalidValue, kind, i, r)
	}
	return nil
}
