package dcgm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestResolveFieldBothGenerations(t *testing.T) {
	tests := []struct {
		names  []string
		id     uint16
		column string
	}{
		{[]string{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "dcgm_fi_prof_gr_engine_active", "1001"}, 1001, "gr_engine_active"},
		{[]string{"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO", "dcgm_fi_prof_sm_active", " 1002 "}, 1002, "sm_active"},
		{[]string{"DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", "dcgm_fi_prof_sm_occupancy"}, 1003, "sm_occupancy"},
		{[]string{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO", "dcgm_fi_prof_pipe_tensor_active"}, 1004, "tensor_active"},
		{[]string{"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO", "dcgm_fi_prof_dram_active"}, 1005, "dram_active"},
		{[]string{"DCGM_FI_PROF_PCIE_TX_BYTES", "dcgm_fi_prof_pcie_tx_bytes"}, 1009, "pcie_tx_bytes_per_s"},
		{[]string{"DCGM_FI_PROF_PCIE_RX_BYTES", "dcgm_fi_prof_pcie_rx_bytes"}, 1010, "pcie_rx_bytes_per_s"},
		{[]string{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "dcgm_pcie_tx_throughput"}, 200, "pcie_tx_bytes_per_s"},
		{[]string{"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "dcgm_pcie_rx_throughput"}, 201, "pcie_rx_bytes_per_s"},
		{[]string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", "dcgm_gpu_utilization"}, 203, "gpu_util"},
		{[]string{"DCGM_FI_DEV_FB_TOTAL"}, 250, "fb_total_mib"},
		{[]string{"DCGM_FI_DEV_FB_USED", "dcgm_fb_used"}, 252, "fb_used_mib"},
		{[]string{"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS", "dcgm_power_usage"}, 155, "power_w"},
		{[]string{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "dcgm_total_energy_consumption"}, 156, "energy_mj"},
		{[]string{"DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"}, 1611, "energy_mj"},
		{[]string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", "dcgm_gpu_temp"}, 150, "temp_c"},
		{[]string{"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR", "dcgm_xid_errors"}, 230, "xid"},
		{[]string{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}, 112, "clock_event_reasons"},
		{[]string{"DCGM_FI_DEV_NAME", "DCGM_FI_DEV_GPU_NAME"}, 50, ""},
		{[]string{"DCGM_FI_DEV_UUID", "DCGM_FI_DEV_GPU_UUID"}, 54, ""},
	}
	for _, tt := range tests {
		for _, n := range tt.names {
			t.Run(strings.TrimSpace(n), func(t *testing.T) {
				f, ok := ResolveField(n)
				if !ok || f.ID != tt.id || f.Column != tt.column {
					t.Errorf("ResolveField(%q) = %+v, %v; want ID %d column %q", n, f, ok, tt.id, tt.column)
				}
			})
		}
	}
	for _, n := range []string{"", "DCGM_FI_DEV_SM_CLOCK", "DCGM_EXP_XID_ERRORS_COUNT", "99999", "-1", "1006"} {
		if f, ok := ResolveField(n); ok {
			t.Errorf("ResolveField(%q) = %+v, want not found", n, f)
		}
	}
}

func TestAliasTableConsistent(t *testing.T) {
	seen := map[string]uint16{}
	for _, f := range fieldSpecs {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if id, dup := seen[strings.ToUpper(n)]; dup {
				t.Errorf("name %s names both %d and %d", n, id, f.ID)
			}
			seen[strings.ToUpper(n)] = f.ID
		}
		if f.Col == colNone && !f.Inventory {
			t.Errorf("field %d fills no column and is not an inventory field", f.ID)
		}
	}
	for c := colNone + 1; c < numColumns; c++ {
		if len(columnSpecs[c]) == 0 || columnNames[c] == "" {
			t.Errorf("column %d has no field or no name", c)
		}
	}
	if got := DefaultFields(); len(got) != 17 || got[1] != "DCGM_FI_PROF_SM_UTIL_RATIO" {
		t.Errorf("DefaultFields = %v", got)
	}
}

func TestParseFieldsCSV(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "dcp-metrics-included.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fields, skipped, err := ParseFieldsCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint16
	for _, f := range fields {
		ids = append(ids, f.ID)
	}
	want := []uint16{150, 155, 156, 1009, 1010, 203, 230, 252, 1001, 1002, 1003, 1004, 1005}
	if !slices.Equal(ids, want) {
		t.Errorf("fields %v, want %v (file order, SM_UTIL_RATIO deduplicated with SM_ACTIVE)", ids, want)
	}
	wantSkipped := []string{"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
		"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
		"DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_EXP_XID_ERRORS_COUNT"}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("skipped %v, want %v", skipped, wantSkipped)
	}
	// The parsed names configure a source.
	cfg := DefaultConfig()
	for _, f := range fields {
		cfg.Fields = append(cfg.Fields, f.Name)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

func TestParseFieldsCSVErrors(t *testing.T) {
	for _, in := range []string{"DCGM FI, gauge, x\n", "\n\n, gauge, help\n", "DCGM_FI_PROF_SM_ACTIVE;gauge\n"} {
		if _, _, err := ParseFieldsCSV(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("ParseFieldsCSV(%q) err = %v, want a line error", in, err)
		}
	}
}

func FuzzParseFieldsCSV(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "dcp-metrics-included.csv"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	f.Add("DCGM_FI_PROF_SM_UTIL_RATIO\n1002,gauge\n# x\n")
	f.Fuzz(func(t *testing.T, in string) {
		fields, _, err := ParseFieldsCSV(strings.NewReader(in))
		if err != nil {
			return
		}
		seen := map[uint16]bool{}
		for _, f := range fields {
			if seen[f.ID] || f.Column == "" {
				t.Fatalf("field %+v repeated or without a column", f)
			}
			seen[f.ID] = true
			if g, ok := ResolveField(f.Name); !ok || g != f {
				t.Fatalf("%s does not resolve to itself", f.Name)
			}
		}
	})
}
