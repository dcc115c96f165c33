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

// PhysicalBounds lists the bounds, for documentation and tests.
var PhysicalBounds = []Bound{BoundPowerW, BoundTempC, BoundPCIeTx, BoundPCIeRx, BoundFBTotalMiB}

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
