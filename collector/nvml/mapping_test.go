package nvml

import (
	"math"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

func TestConversions(t *testing.T) {
	if got := bytesToMiB(85520809984); got != 81559 {
		t.Errorf("bytesToMiB(H100) = %d, want 81559", got)
	}
	if got := bytesToMiB(1<<20 - 1); got != 0 {
		t.Errorf("bytesToMiB rounds down: got %d", got)
	}
	if got := bytesToMiB(math.MaxUint64 - 1); got != math.MaxUint32 {
		t.Errorf("bytesToMiB saturates: got %d", got)
	}
	if got := processMiB(valueNotAvailable); got != 0 {
		t.Errorf("processMiB(NVML_VALUE_NOT_AVAILABLE) = %d, want 0", got)
	}
	if got := processMiB(3 << 30); got != 3072 {
		t.Errorf("processMiB(3 GiB) = %d", got)
	}
	for p, want := range map[float64]float32{0: 0, 50: 0.5, 100: 1, 130: 1, -1: 0, 86: 0.86} {
		if got := percentToRatio(p); got != want {
			t.Errorf("percentToRatio(%v) = %v, want %v", p, got, want)
		}
	}
	if got := kbPerSToBytes(412000); got != 421888000 {
		t.Errorf("kbPerSToBytes = %v", got)
	}
}

func TestGPUSampleNothingRead(t *testing.T) {
	r := reading{uuid: "GPU-x", model: "NVIDIA H100 80GB HBM3", card: "H100-80GB", index: 3}
	got := r.gpuSample(42)
	want := schemas.NewGPUSample()
	want.TimeMs, want.GPUUUID, want.Model, want.Card, want.GPUIndex = 42, "GPU-x", "NVIDIA H100 80GB HBM3", "H100-80GB", 3
	checkGPU(t, got, want)
}

func TestMIGProfileName(t *testing.T) {
	const (
		a100_40 = 40960 << 20 // bytes
		a100_80 = 81920 << 20
		h100_80 = 81559 << 20
		h200    = 143771 << 20
	)
	tests := []struct {
		name string
		a    attributes
		card uint64
		want string
	}{
		{"A100-40 1g.5gb", attributes{GPUInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 4864}, a100_40, "1g.5gb"},
		{"A100-40 2g.10gb", attributes{GPUInstanceSliceCount: 2, ComputeInstanceSliceCount: 2, MemorySizeMB: 9728}, a100_40, "2g.10gb"},
		{"A100-40 3g.20gb", attributes{GPUInstanceSliceCount: 3, ComputeInstanceSliceCount: 3, MemorySizeMB: 19968}, a100_40, "3g.20gb"},
		{"A100-40 7g.40gb", attributes{GPUInstanceSliceCount: 7, ComputeInstanceSliceCount: 7, MemorySizeMB: 40192}, a100_40, "7g.40gb"},
		{"A100-80 1g.10gb", attributes{GPUInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 9728}, a100_80, "1g.10gb"},
		{"A100-80 7g.80gb", attributes{GPUInstanceSliceCount: 7, ComputeInstanceSliceCount: 7, MemorySizeMB: 80384}, a100_80, "7g.80gb"},
		{"H100 1g.10gb", attributes{GPUInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 9984}, h100_80, "1g.10gb"},
		{"H100 1g.20gb", attributes{GPUInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 19968}, h100_80, "1g.20gb"},
		{"H100 3g.40gb", attributes{GPUInstanceSliceCount: 3, ComputeInstanceSliceCount: 3, MemorySizeMB: 40448}, h100_80, "3g.40gb"},
		{"H200 1g.18gb", attributes{GPUInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 16384}, h200, "1g.18gb"},
		{"compute instance smaller than GPU instance", attributes{GPUInstanceSliceCount: 3, ComputeInstanceSliceCount: 1, MemorySizeMB: 40448}, h100_80, "1c.3g.40gb"},
		{"no slices: not MIG", attributes{MemorySizeMB: 40960}, a100_40, ""},
		{"card size unknown", attributes{GPUInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 4864}, 0, "1g.5gb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := migProfileName(tc.a, tc.card); got != tc.want {
				t.Errorf("migProfileName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	if errGPUIsLost.Error() != "ERROR_GPU_IS_LOST" || status(1234).Error() != "ERROR_1234" {
		t.Errorf("names: %v %v", errGPUIsLost, status(1234))
	}
	for s, name := range statusNames {
		if got, ok := parseStatus(name); !ok || got != s {
			t.Errorf("parseStatus(%q) = %v, %v", name, got, ok)
		}
	}
	if !errNotSupported.unsupported() || !errFunctionNotFound.unsupported() || errNoPermission.unsupported() {
		t.Error("unsupported() classifies wrongly")
	}
}
