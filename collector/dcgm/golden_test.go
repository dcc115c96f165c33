package dcgm

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// goldenNumber renders a float32 column as the shortest decimal, null when Missing.
func goldenNumber(f float32) any {
	if schemas.IsMissing(f) {
		return nil
	}
	return json.Number(strconv.FormatFloat(float64(f), 'g', -1, 32))
}

func goldenGPU(g schemas.GPUSample) map[string]any {
	return map[string]any{
		"ts": time.UnixMilli(g.TimeMs).UTC().Format(time.RFC3339Nano), "gpu_uuid": g.GPUUUID, "gpu_index": g.GPUIndex,
		"model": g.Model, "driver_version": g.DriverVersion, "card": g.Card, "mig_profile": g.MIGProfile,
		"fb_total_mib": g.FBTotalMiB, "fb_used_mib": g.FBUsedMiB,
		"gr_engine_active": goldenNumber(g.GrEngineActive), "sm_active": goldenNumber(g.SMActive),
		"sm_occupancy": goldenNumber(g.SMOccupancy), "tensor_active": goldenNumber(g.TensorActive),
		"dram_active": goldenNumber(g.DRAMActive), "gpu_util": goldenNumber(g.GPUUtil),
		"pcie_tx_bytes_per_s": goldenNumber(g.PCIeTxBytesPerS), "pcie_rx_bytes_per_s": goldenNumber(g.PCIeRxBytesPerS),
		"power_w": goldenNumber(g.PowerW), "energy_mj": g.EnergyMilliJ, "temp_c": goldenNumber(g.TempC),
		"xid": g.XID, "clock_event_reasons": g.ClockEventReasons,
		"ecc_sbe_volatile": g.ECCCorrectedVolatile, "ecc_dbe_volatile": g.ECCUncorrectedVolatile,
	}
}

func goldenProcess(p schemas.ProcessSample) map[string]any {
	return map[string]any{
		"ts": time.UnixMilli(p.TimeMs).UTC().Format(time.RFC3339Nano), "gpu_uuid": p.GPUUUID, "pid": p.PID,
		"process_name": p.ProcessName, "job": p.Job, "fb_used_mib": p.FBUsedMiB,
		"sm_util": goldenNumber(p.SMUtil), "mem_util": goldenNumber(p.MemUtil),
	}
}

// checkGolden compares a batch and events with testdata/name.golden.json.
func checkGolden(t *testing.T, name string, b *schemas.SampleBatch, events []Event) {
	t.Helper()
	doc := map[string]any{"gpus": []any{}, "processes": []any{}, "events": []any{}}
	for _, g := range b.GPUs {
		doc["gpus"] = append(doc["gpus"].([]any), goldenGPU(g))
	}
	for _, p := range b.Processes {
		doc["processes"] = append(doc["processes"].([]any), goldenProcess(p))
	}
	for _, e := range events {
		doc["events"] = append(doc["events"].([]any), e)
	}
	got, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the mapping's output (go test -update rewrites it); got:\n%s", path, got)
	}
}
