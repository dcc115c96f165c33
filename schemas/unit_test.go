package schemas

import (
	"math"
	"testing"
)

func TestGPUWeight(t *testing.T) {
	for _, c := range []struct {
		card, profile string
		want          float64
	}{
		{"H100-80GB", "", 1},
		{"H100-80GB", "1g.10gb", 1.0 / 7},
		{"A100-40GB", "3g.20gb", 3.0 / 7},
		{"A100-40GB", "7g.40gb", 1},
		{"A30-24GB", "1g.6gb", 1.0 / 4},
		{"A30-24GB", "4g.24gb", 1},
		{"H100-80GB", "1c.3g.40gb", 3.0 / 7}, // a compute instance: its GPU instance's slices
		{"H100-80GB", "odd", 1.0 / 7},        // no "<n>g.": one slice, as the SQL counts it
		{"H100-80GB", "300g.1gb", 1.0 / 7},   // past UInt8: one slice, as the SQL counts it
	} {
		if got := GPUWeight(c.card, c.profile); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("GPUWeight(%q, %q) = %v, want %v", c.card, c.profile, got, c.want)
		}
	}
}

func TestUnitsSideBySide(t *testing.T) {
	var u Units
	for range 8 {
		u.Add("A100-40GB", "1g.5gb")
	}
	for range 2 {
		u.Add("A100-40GB", "3g.20gb")
	}
	// 8 slices of 1/7 and 2 of 3/7 weigh 2 GPUs: ten units, never "10 GPUs".
	if u.Whole != 0 || u.Slices() != 10 || math.Abs(u.GPUEquivalents-2) > 1e-12 {
		t.Fatalf("units %+v: want 0 whole, 10 slices, 2 GPU-equivalents", u)
	}
	if got, want := u.String(), "10 MIG (8×1g.5gb, 2×3g.20gb) = 2.0 GPU-eq"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	u.Add("A100-40GB", "")
	if got, want := u.String(), "1 GPU + 10 MIG (8×1g.5gb, 2×3g.20gb) = 3.0 GPU-eq"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (Units{Whole: 16, GPUEquivalents: 16}).String(); got != "16 GPUs" {
		t.Errorf("whole GPUs only: %q", got)
	}
}
