package schemas

import (
	"math"
	"testing"
)

func TestQuantizeStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    float32
		step float64
		want float32
	}{
		{"ratio rounds down", 0.50004, RatioStep, 0.5},
		{"ratio rounds up", 0.9999, RatioStep, 1},
		{"ratio zero", 0, RatioStep, 0},
		{"ratio small", 0.003, RatioStep, 2.0 / 512},
		{"power", 412.13, PowerStepW, 412.25},
		{"temp", 61.6, TempStepC, 62},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := QuantizeStep(tc.v, tc.step); got != tc.want {
				t.Errorf("QuantizeStep(%v, %v) = %v, want %v", tc.v, tc.step, got, tc.want)
			}
		})
	}
	if !IsMissing(QuantizeStep(Missing, RatioStep)) {
		t.Error("Missing did not stay Missing")
	}
}

func TestQuantizeMantissa(t *testing.T) {
	for _, v := range []float32{1, 3, 1e9, 123456.7, 2999.9, 0.3, 1e-30, 3.4e38} {
		got := QuantizeMantissa(v, RateMantissaBits)
		if rel := math.Abs(float64(got-v)) / float64(v); rel > 1.0/256 {
			t.Errorf("QuantizeMantissa(%v) = %v: relative error %.5f above 2^-8", v, got, rel)
		}
		if low := math.Float32bits(got) & (1<<(23-RateMantissaBits) - 1); low != 0 {
			t.Errorf("QuantizeMantissa(%v) = %v keeps low mantissa bits %x", v, got, low)
		}
	}
	for _, v := range []float32{0, Missing, float32(math.Inf(1))} {
		got := QuantizeMantissa(v, RateMantissaBits)
		if math.Float32bits(got) != math.Float32bits(v) {
			t.Errorf("QuantizeMantissa(%v) = %v, want it unchanged", v, got)
		}
	}
}

// FuzzQuantizeSteps checks that a column rounded at once is each value rounded by
// QuantizeStep, bit for bit, for the power-of-two steps (multiplied by the inverse)
// and another step (divided).
func FuzzQuantizeSteps(f *testing.F) {
	for _, v := range []float32{0, 0.50004, 0.9999, 0.003, 412.13, 61.6, -3.3, 1e30, -1e-30, 3.4e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), Missing, 1.0 / 1024, 3.0 / 1024} {
		f.Add(math.Float32bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint32) {
		v := math.Float32frombits(bits)
		for _, step := range []float64{RatioStep, PowerStepW, TempStepC, 0.1} {
			want := QuantizeStep(v, step)
			got := []float32{v}
			QuantizeSteps(got, step)
			if math.Float32bits(got[0]) != math.Float32bits(want) && !(IsMissing(want) && IsMissing(got[0])) {
				t.Fatalf("step %v: QuantizeSteps(%v) = %v, QuantizeStep %v", step, v, got[0], want)
			}
		}
	})
}

func BenchmarkQuantizeRatios(b *testing.B) {
	vs := make([]float32, 4096)
	for i := range vs {
		vs[i] = float32(i%1000) / 997
	}
	col := make([]float32, len(vs))
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			copy(col, vs)
			for i, v := range col {
				col[i] = QuantizeStep(v, RatioStep)
			}
		}
	})
	b.Run("column", func(b *testing.B) {
		for b.Loop() {
			copy(col, vs)
			QuantizeRatios(col)
		}
	})
}
