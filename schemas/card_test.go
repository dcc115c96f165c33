package schemas

import "testing"

func TestCardType(t *testing.T) {
	tests := []struct {
		name  string
		model string
		mib   uint32
		want  string
	}{
		{"h100 sxm", "NVIDIA H100 80GB HBM3", 81559, "H100-80GB"},
		{"a100 40", "NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"},
		{"a100 80 pcie", "NVIDIA A100 80GB PCIe", 81920, "A100-80GB"},
		{"l40s", "NVIDIA L40S", 46068, "L40S-48GB"},
		{"h200", "NVIDIA H200", 143771, "H200-141GB"},
		{"v100", "Tesla V100-SXM2-32GB", 32510, "V100-32GB"},
		{"t4", "Tesla T4", 15360, "T4-16GB"},
		{"rtx a6000", "NVIDIA RTX A6000", 49140, "RTXA6000-48GB"},
		{"geforce", "NVIDIA GeForce RTX 4090", 24564, "RTX4090-24GB"},
		{"no memory", "NVIDIA L4", 0, "L4"},
		{"empty", "", 0, "unknown"},
		{"odd size", "NVIDIA X1", 3000 * 1024, "X1-3000GB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CardType(tt.model, tt.mib); got != tt.want {
				t.Errorf("CardType(%q, %d) = %q, want %q", tt.model, tt.mib, got, tt.want)
			}
		})
	}
}
