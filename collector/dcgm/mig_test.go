package dcgm

import "testing"

func TestMIGProfileName(t *testing.T) {
	tests := []struct {
		name                            string
		slices, maxSlices, mib, cardMiB uint32
		card                            string
		want                            string
	}{
		{"A100 40GB 1g from memory", 1, 7, 4864, 40960, "A100-40GB", "1g.5gb"},
		{"A100 40GB 3g from memory", 3, 7, 19968, 40960, "A100-40GB", "3g.20gb"},
		{"A100 40GB 7g from memory", 7, 7, 40192, 40960, "A100-40GB", "7g.40gb"},
		{"A100 80GB 1g from memory", 1, 7, 9728, 81920, "A100-80GB", "1g.10gb"},
		{"A100 80GB 1g double memory (1g.20gb)", 1, 7, 19968, 81920, "A100-80GB", "1g.20gb"},
		{"A100 80GB 3g from memory", 3, 7, 40192, 81920, "A100-80GB", "3g.40gb"},
		{"A100 80GB 4g from memory", 4, 7, 40192, 81920, "A100-80GB", "4g.40gb"},
		{"H100 80GB 2g without memory", 2, 7, 0, 81559, "H100-80GB", "2g.20gb"},
		{"H100 80GB 3g without memory", 3, 7, 0, 81559, "H100-80GB", "3g.40gb"},
		{"H100 80GB 7g without memory", 7, 7, 0, 81559, "H100-80GB", "7g.80gb"},
		{"H100 NVL 94GB 1g", 1, 7, 11008, 95830, "H100-94GB", "1g.12gb"},
		{"H100 NVL 94GB 3g", 3, 7, 0, 95830, "H100-94GB", "3g.47gb"},
		{"H200 141GB 1g", 1, 7, 16384, 143771, "H200-141GB", "1g.18gb"},
		{"H200 141GB 2g", 2, 7, 0, 143771, "H200-141GB", "2g.35gb"},
		{"H200 141GB 4g", 4, 7, 0, 143771, "H200-141GB", "4g.71gb"},
		{"B200 180GB 1g", 1, 7, 0, 183359, "B200-180GB", "1g.23gb"},
		{"A30 1g", 1, 4, 5836, 24576, "A30-24GB", "1g.6gb"},
		{"A30 2g", 2, 4, 0, 24576, "A30-24GB", "2g.12gb"},
		{"A30 4g", 4, 4, 24064, 24576, "A30-24GB", "4g.24gb"},
		{"card without a size", 1, 7, 0, 81920, "unknown", "1g.10gb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := migProfileName(tt.slices, tt.maxSlices, tt.mib, tt.cardMiB, tt.card); got != tt.want {
				t.Errorf("migProfileName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMIGUnitsDefaults(t *testing.T) {
	g := &gpuInfo{ID: 3, Index: 3, UUID: "GPU-aaaa", Model: "NVIDIA A30", FBTotalMiB: 24576, Card: cardOf("NVIDIA A30", 24576)}
	entries := []migEntry{
		{Entity: entity{entityGPUInstance, 7}, Parent: entity{entityGPU, 3}, NVMLInstanceID: 2, Slices: 2},
		{Entity: entity{entityComputeInstance, 9}, Parent: entity{entityGPUInstance, 7}, NVMLComputeInstanceID: 1},
		{Entity: entity{entityGPUInstance, 8}, Parent: entity{entityGPU, 4}, NVMLInstanceID: 1, Slices: 1},
	}
	units := migUnits(g, entries, nil)
	if len(units) != 1 {
		t.Fatalf("got %d units, want 1 (the other instance is on GPU 4)", len(units))
	}
	u := units[0]
	if u.UUID != "MIG-GPU-aaaa/2/1" || u.MIGProfile != "2g.12gb" || u.Share != 0.5 || u.Card != "A30-24GB" || !u.MIG || u.Index != 3 {
		t.Errorf("unit %+v", u)
	}
	if units := migUnits(&gpuInfo{ID: 4}, nil, nil); len(units) != 0 {
		t.Errorf("GPU without instances: %d units", len(units))
	}
}
