package console

import "testing"

func TestEvidenceNamesAndUnits(t *testing.T) {
	ev := map[string]float64{
		"gpus": 1, "samples": 179, "sm_active_p50": 0.031, "active_fraction": 0.017, "mem_used_mib": 7475,
		"card_mem_mib": 512, "window_minutes": 30, "hung_minutes": 200, "pcie_bytes_per_s_p50": 16000,
		"power_w_p50": 71.4, "price_per_gpu_hour": 2.5, "savings_per_month": 1234.5, "tenants": 3, "drop_skew_seconds": 4.25,
	}
	want := map[string][2]string{
		"gpus":                 {"GPUs", "1 GPU"},
		"samples":              {"Samples", "179 samples"},
		"sm_active_p50":        {"SM active, median", "3.1 %"},
		"active_fraction":      {"Active (share of the time)", "1.7 %"},
		"mem_used_mib":         {"Memory used", "7.3 GiB"},
		"card_mem_mib":         {"The card's memory", "512 MiB"},
		"window_minutes":       {"Detection window", "30 min"},
		"hung_minutes":         {"Hung for", "3 h 20 min"},
		"pcie_bytes_per_s_p50": {"PCIe, median", "16.0 kB/s"},
		"power_w_p50":          {"Power, median", "71 W"},
		"price_per_gpu_hour":   {"Price per GPU-hour now", "2.50 USD per GPU-hour"},
		"savings_per_month":    {"Savings per month", "1234.50 USD per month"},
		"tenants":              {"Processes sharing the GPU (most)", "3"},
		"drop_skew_seconds":    {"Skew between the GPUs' drops", "4.2 s"},
	}
	got := readEvidence(ev, "USD")
	if len(got) != len(ev) {
		t.Fatalf("%d figures of %d", len(got), len(ev))
	}
	for i, e := range got {
		if i > 0 && got[i-1].Name > e.Name {
			t.Errorf("not sorted by name: %q before %q", got[i-1].Name, e.Name)
		}
		if w := want[e.Key]; e.Name != w[0] || e.Value != w[1] {
			t.Errorf("%s: %q %q, want %q %q", e.Key, e.Name, e.Value, w[0], w[1])
		}
	}
}
