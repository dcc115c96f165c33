package schemas

import "math"

// Stored precision. Ingest rounds measurements to what the source can tell apart
// before they are stored: the digits below are measurement noise, and noise does
// not compress (a full-precision Float32 ratio costs about 2 bytes on disk, the
// same ratio rounded to RatioStep under 1). Every step is a power of two, so a
// rounded value is exact in Float32 and its low mantissa bits are zero, and sums
// of rounded values in the rollups are exact too.
const (
	// RatioStep is the resolution of activity ratios (0..1): 1/512, about 0.2 %.
	// DCGM's profiling fields are estimates averaged over its sampling interval;
	// two readings 0.2 % apart are the same activity, and every threshold the
	// analyzer applies is 1 % or coarser.
	RatioStep = 1.0 / 512
	// PowerStepW is the resolution of power draw: a quarter watt, well inside the
	// ±5 W accuracy NVIDIA gives for the board power reading.
	PowerStepW = 0.25
	// TempStepC is the resolution of temperature: DCGM and NVML report whole
	// degrees Celsius.
	TempStepC = 1.0
	// RateMantissaBits is the precision of byte rates (PCIe): 7 bits of mantissa,
	// a relative error of at most 0.4 % at any magnitude (the activity threshold is 100 MB/s).
	RateMantissaBits = 7
)

// QuantizeStep rounds v to the nearest multiple of step; Missing stays Missing.
func QuantizeStep(v float32, step float64) float32 {
	if IsMissing(v) || math.IsInf(float64(v), 0) {
		return v
	}
	return float32(math.Round(float64(v)/step) * step)
}

// QuantizeMantissa rounds v to bits bits of mantissa (a relative precision of
// 2^-(bits+1)); Missing, infinities and zero are unchanged.
func QuantizeMantissa(v float32, bits uint) float32 {
	if bits >= 23 {
		return v
	}
	u := math.Float32bits(v)
	if u&0x7f800000 == 0x7f800000 { // NaN or ±Inf
		return v
	}
	drop := 23 - bits
	mask := uint32(1)<<drop - 1
	if r := (u + 1<<(drop-1)) &^ mask; r&0x7f800000 != 0x7f800000 {
		return math.Float32frombits(r)
	}
	return math.Float32frombits(u &^ mask) // rounding up would overflow to infinity

}

// QuantizeRatios rounds activity ratios in place to RatioStep.
func QuantizeRatios(vs []float32) { QuantizeSteps(vs, RatioStep) }

// QuantizeSteps rounds vs in place to multiples of step, as QuantizeStep does each.
// Ingest calls it on every ratio, power and temperature column it stores, so it
// multiplies by the step's inverse rather than divide by the step: the same value
// for a power of two (every step above is one), and several times cheaper than a
// division per value.
func QuantizeSteps(vs []float32, step float64) {
	inv := 1 / step
	if frac, _ := math.Frexp(step); frac != 0.5 {
		// Not a power of two: v*inv could round differently from v/step.
		for i, v := range vs {
			vs[i] = QuantizeStep(v, step)
		}
		return
	}
	for i, v := range vs {
		if f := float64(v); f-f == 0 { // neither NaN (Missing) nor infinite
			vs[i] = float32(math.Round(f*inv) * step)
		}
	}
}

// QuantizeRates rounds byte rates in place to RateMantissaBits of mantissa.
func QuantizeRates(vs []float32) {
	for i, v := range vs {
		vs[i] = QuantizeMantissa(v, RateMantissaBits)
	}
}
