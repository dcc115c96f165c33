package nvml

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/schemas"
)

var nan = schemas.Missing

// newTestSource builds a Source over the fixture's fake library, logging into the
// returned buffer.
func newTestSource(t testing.TB, f *fixture, procRoot string, edit ...func(*Config)) (*Source, *Metrics, *bytes.Buffer) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ProcRoot = procRoot
	for _, e := range edit {
		e(&cfg)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := NewMetrics(prometheus.NewPedanticRegistry())
	s, err := New(cfg, WithLogger(log), withLibrary(f.library()), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m, &logs
}

func sampleFixture(t *testing.T, name string, edit ...func(*Config)) (schemas.SampleBatch, *fixture, *Metrics, *bytes.Buffer) {
	t.Helper()
	f, root := loadFixture(t, name)
	s, m, logs := newTestSource(t, f, root, edit...)
	var b schemas.SampleBatch
	if err := s.Sample(t.Context(), f.At, &b); err != nil {
		t.Fatal(err)
	}
	return b, f, m, logs
}

// sameFloat compares float fields, Missing equal to Missing.
func sameFloat(a, b float32) bool {
	return a == b || (math.IsNaN(float64(a)) && math.IsNaN(float64(b)))
}

func checkGPU(t *testing.T, got, want schemas.GPUSample) {
	t.Helper()
	floats := []struct {
		name      string
		got, want float32
	}{
		{"GrEngineActive", got.GrEngineActive, want.GrEngineActive},
		{"SMActive", got.SMActive, want.SMActive},
		{"SMOccupancy", got.SMOccupancy, want.SMOccupancy},
		{"TensorActive", got.TensorActive, want.TensorActive},
		{"DRAMActive", got.DRAMActive, want.DRAMActive},
		{"GPUUtil", got.GPUUtil, want.GPUUtil},
		{"PCIeTxBytesPerS", got.PCIeTxBytesPerS, want.PCIeTxBytesPerS},
		{"PCIeRxBytesPerS", got.PCIeRxBytesPerS, want.PCIeRxBytesPerS},
		{"PowerW", got.PowerW, want.PowerW},
		{"TempC", got.TempC, want.TempC},
	}
	for _, f := range floats {
		if !sameFloat(f.got, f.want) {
			t.Errorf("%s %s = %v, want %v", want.GPUUUID, f.name, f.got, f.want)
		}
	}
	g, w := got, want
	for _, p := range []*schemas.GPUSample{&g, &w} {
		p.GrEngineActive, p.SMActive, p.SMOccupancy, p.TensorActive, p.DRAMActive = 0, 0, 0, 0, 0
		p.GPUUtil, p.PCIeTxBytesPerS, p.PCIeRxBytesPerS, p.PowerW, p.TempC = 0, 0, 0, 0, 0
	}
	if g != w {
		t.Errorf("GPU sample\n got %+v\nwant %+v", g, w)
	}
}

func checkProcesses(t *testing.T, got, want []schemas.ProcessSample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d process rows, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !sameFloat(g.SMUtil, w.SMUtil) || !sameFloat(g.MemUtil, w.MemUtil) {
			t.Errorf("pid %d util = %v/%v, want %v/%v", w.PID, g.SMUtil, g.MemUtil, w.SMUtil, w.MemUtil)
		}
		g.SMUtil, g.MemUtil, w.SMUtil, w.MemUtil = 0, 0, 0, 0
		if g != w {
			t.Errorf("process row %d\n got %+v\nwant %+v", i, g, w)
		}
	}
}

const atMs = 1796112001000 // fixtures' "at", 2026-12-01T08:00:01Z

func TestSampleH100(t *testing.T) {
	b, _, _, _ := sampleFixture(t, "h100")
	if len(b.GPUs) != 1 {
		t.Fatalf("%d GPU rows, want 1", len(b.GPUs))
	}
	want := schemas.NewGPUSample()
	want.TimeMs = atMs
	want.GPUUUID = "GPU-5b9a7c1e-2f43-4d8e-9a61-0c3f5e7d2b18"
	want.Model = "NVIDIA H100 80GB HBM3"
	want.DriverVersion = "570.86.15" // nvmlSystemGetDriverVersion
	want.Card = "H100-80GB"
	want.FBTotalMiB = 81559 // 85520809984 B
	want.FBUsedMiB = 50176  // 52613349376 B (v2: reserved memory not included)
	want.GPUUtil = 0.87
	want.PowerW = 612.345          // 612345 mW
	want.EnergyMilliJ = 4512345678 // already mJ
	want.TempC = 64
	want.PCIeTxBytesPerS = 13250 * 1024  // KB/s
	want.PCIeRxBytesPerS = 412000 * 1024 // KB/s
	want.ClockEventReasons = 4
	want.ECCCorrectedVolatile, want.ECCUncorrectedVolatile = 17, 1
	checkGPU(t, b.GPUs[0], want)

	uuid := want.GPUUUID
	checkProcesses(t, b.Processes, []schemas.ProcessSample{
		// In both the compute and graphics lists: one row. Mean of the two samples
		// in the window: SM (82+90)/2 %, memory (37+45)/2 %.
		{TimeMs: atMs, GPUUUID: uuid, PID: 4242, ProcessName: "python3", FBUsedMiB: 38400, SMUtil: 0.86, MemUtil: 0.41},
		// Its only sample is older than the window: it ran no kernel since, 0 (NVML
		// lists only processes that did); no /proc entry.
		{TimeMs: atMs, GPUUUID: uuid, PID: 4250, ProcessName: "", FBUsedMiB: 11776, SMUtil: 0, MemUtil: 0},
	})
}

func TestSampleMIG(t *testing.T) {
	b, f, m, _ := sampleFixture(t, "a100_mig")
	instances := []struct {
		uuid, profile     string
		totalMiB, usedMiB uint32
	}{
		{"MIG-0f6e3d2c-1b4a-5c8d-9e7f-a1b2c3d4e5f6", "3g.20gb", 19968, 14336},
		{"MIG-2a9c4b7d-3e5f-5a1b-8c2d-f0e1d2c3b4a5", "2g.10gb", 9728, 4096},
		{"MIG-7e1d0c9b-8a7f-5e6d-4c3b-2a1f0e9d8c7b", "1g.5gb", 4864, 1024},
	}
	if len(b.GPUs) != len(instances) {
		t.Fatalf("%d GPU rows, want one per MIG instance (%d): %+v", len(b.GPUs), len(instances), b.GPUs)
	}
	for i, in := range instances {
		want := schemas.NewGPUSample()
		want.TimeMs = atMs
		want.GPUUUID = in.uuid
		want.Model = "NVIDIA A100-SXM4-40GB"
		want.DriverVersion = "550.127.05"
		want.Card = "A100-40GB" // the parent's card type
		want.MIGProfile = in.profile
		want.FBTotalMiB, want.FBUsedMiB = in.totalMiB, in.usedMiB
		want.TempC = 48                                               // the die's
		want.ECCCorrectedVolatile, want.ECCUncorrectedVolatile = 3, 2 // the card's memory
		// GPUUtil: not supported per instance. Power, energy, PCIe: the card's, left
		// out so that instances do not count it three times.
		checkGPU(t, b.GPUs[i], want)
	}
	checkProcesses(t, b.Processes, []schemas.ProcessSample{
		{TimeMs: atMs, GPUUUID: instances[0].uuid, PID: 5101, ProcessName: "python", FBUsedMiB: 13824, SMUtil: nan, MemUtil: nan},
		{TimeMs: atMs, GPUUUID: instances[1].uuid, PID: 5202, ProcessName: "tritonserver", FBUsedMiB: 3584, SMUtil: nan, MemUtil: nan},
		{TimeMs: atMs, GPUUUID: instances[1].uuid, PID: 5203, ProcessName: "tritonserver", FBUsedMiB: 256, SMUtil: nan, MemUtil: nan},
		{TimeMs: atMs, GPUUUID: instances[2].uuid, PID: 5301, ProcessName: "jupyter-lab", FBUsedMiB: 768, SMUtil: nan, MemUtil: nan},
	})
	for _, in := range instances {
		if v := value(t, m.unsupported.WithLabelValues(in.uuid, "gpu_util")); v != 1 {
			t.Errorf("%s gpu_util unsupported = %v, want 1", in.uuid, v)
		}
	}
	parent := f.Devices[0]
	if v := value(t, m.unsupported.WithLabelValues(parent.UUIDValue, "process_util")); v != 1 {
		t.Errorf("parent process_util unsupported = %v, want 1", v)
	}
	// Per-instance power, energy and PCIe are not asked for at all.
	for _, fn := range []string{"PowerUsage", "TotalEnergyConsumption", "PcieThroughput"} {
		for _, d := range append([]*fakeDevice{parent}, parent.MIGDevices...) {
			if d != nil && d.called(fn) != 0 {
				t.Errorf("%s called on %s", fn, d.UUIDValue)
			}
		}
	}
}

func TestSampleMIGDisabledInConfig(t *testing.T) {
	b, _, _, _ := sampleFixture(t, "a100_mig", func(c *Config) { c.MIG = false })
	if len(b.GPUs) != 1 || b.GPUs[0].GPUUUID != "GPU-8d3f1a2b-6c4e-4f7a-b915-2e6d0c9a4f73" || b.GPUs[0].MIGProfile != "" {
		t.Fatalf("want the whole GPU, got %+v", b.GPUs)
	}
	g := b.GPUs[0]
	if g.PowerW != 187 || g.EnergyMilliJ != 987654321 || g.FBUsedMiB != 19456 || !schemas.IsMissing(g.GPUUtil) {
		t.Errorf("whole GPU = %+v", g)
	}
}

func TestSampleUnsupported(t *testing.T) {
	b, f, m, _ := sampleFixture(t, "v100_unsupported")
	want := schemas.NewGPUSample()
	want.TimeMs = atMs
	want.GPUUUID = f.Devices[0].UUIDValue
	want.Model = "Tesla V100-PCIE-16GB"
	want.Card = "V100-16GB"
	want.FBTotalMiB, want.FBUsedMiB = 16160, 8192
	want.GPUUtil = 0.55
	want.PowerW = 148.5
	want.TempC = 51
	// Energy 0, ECC counters 0, PCIe Missing, clock event reasons 0: not supported.
	checkGPU(t, b.GPUs[0], want)
	uuid := want.GPUUUID
	checkProcesses(t, b.Processes, []schemas.ProcessSample{
		// NVML_VALUE_NOT_AVAILABLE memory becomes 0.
		{TimeMs: atMs, GPUUUID: uuid, PID: 7001, ProcessName: "python3", FBUsedMiB: 0, SMUtil: nan, MemUtil: nan},
		{TimeMs: atMs, GPUUUID: uuid, PID: 7002, ProcessName: "Xorg", FBUsedMiB: 64, SMUtil: nan, MemUtil: nan},
	})
	for _, field := range []string{"energy_mj", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "process_util", "clock_event_reasons", "ecc_volatile", "xid"} {
		if v := value(t, m.unsupported.WithLabelValues(uuid, field)); v != 1 {
			t.Errorf("%s unsupported = %v, want 1", field, v)
		}
	}
	if n := series(m.unsupported); n != 7 {
		t.Errorf("%d unsupported fields reported, want 7", n)
	}
	if n := series(m.callErrors); n != 0 {
		t.Errorf("unsupported fields counted as %d call errors", n)
	}
}

func TestSampleLostGPU(t *testing.T) {
	b, f, m, logs := sampleFixture(t, "lost")
	if len(b.GPUs) != 2 || b.GPUs[0].GPUIndex != 0 || b.GPUs[1].GPUIndex != 2 {
		t.Fatalf("want GPUs 0 and 2, got %+v", b.GPUs)
	}
	if b.GPUs[1].GPUUUID != f.Devices[2].UUIDValue || b.GPUs[1].PowerW != 301 || b.GPUs[1].Card != "L40S-48GB" {
		t.Errorf("GPU 2 = %+v", b.GPUs[1])
	}
	checkProcesses(t, b.Processes, []schemas.ProcessSample{
		{TimeMs: atMs, GPUUUID: f.Devices[0].UUIDValue, PID: 8101, ProcessName: "torchrun", FBUsedMiB: 8192, SMUtil: 0.30, MemUtil: 0.12},
		{TimeMs: atMs, GPUUUID: f.Devices[2].UUIDValue, PID: 8301, ProcessName: "vllm", FBUsedMiB: 4608, SMUtil: 0.71, MemUtil: 0.33},
	})
	if v := value(t, m.gpusLost); v != 1 {
		t.Errorf("gpus lost = %v, want 1", v)
	}
	if v := value(t, m.callErrors.WithLabelValues("DeviceByIndex", "ERROR_GPU_IS_LOST")); v != 1 {
		t.Errorf("lost DeviceByIndex calls = %v, want 1", v)
	}
	if !strings.Contains(logs.String(), "GPU lost") || !strings.Contains(logs.String(), "gpu_index=1") {
		t.Errorf("no log line for the lost GPU:\n%s", logs)
	}
}

// TestGPUBecomesLost: a GPU lost between ticks drops out and is logged once, with
// the UUID it had; when it answers again it is sampled again.
func TestGPUBecomesLost(t *testing.T) {
	_, f, m, logs, tick := xidSource(t)
	if b := tick(); len(b.GPUs) != 3 || len(b.Processes) != 3 {
		t.Fatalf("healthy: %d GPUs, %d processes, want 3 and 3", len(b.GPUs), len(b.Processes))
	}
	f.Devices[1].Errors = map[string]string{"*": "ERROR_GPU_IS_LOST"}
	for range 2 {
		if b := tick(); len(b.GPUs) != 2 || len(b.Processes) != 2 {
			t.Fatalf("lost: %d GPUs, %d processes, want 2 and 2", len(b.GPUs), len(b.Processes))
		}
	}
	if n := strings.Count(logs.String(), "GPU lost"); n != 1 {
		t.Errorf("%d lost log lines, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), f.Devices[1].UUIDValue) {
		t.Errorf("lost log line without the UUID:\n%s", logs)
	}
	if v := value(t, m.gpusLost); v != 1 {
		t.Errorf("gpus lost = %v, want 1", v)
	}
	f.Devices[1].Errors = nil
	if b := tick(); len(b.GPUs) != 3 {
		t.Fatalf("recovered: %d GPUs, want 3", len(b.GPUs))
	}
	if v := value(t, m.gpusLost); v != 0 {
		t.Errorf("gpus lost = %v, want 0", v)
	}
	if !strings.Contains(logs.String(), "GPU answers again") {
		t.Errorf("no recovery log line:\n%s", logs)
	}
}

func TestAllGPUsLost(t *testing.T) {
	f, root := loadFixture(t, "lost")
	f.Devices = f.Devices[1:2]
	s, _, _ := newTestSource(t, f, root)
	var b schemas.SampleBatch
	if err := s.Sample(t.Context(), f.At, &b); !errors.Is(err, ErrAllGPUsLost) {
		t.Fatalf("err = %v, want ErrAllGPUsLost", err)
	}
}

func TestDeviceCountFails(t *testing.T) {
	s, m, _ := newTestSource(t, &fixture{}, t.TempDir())
	s.lib.(*fakeLibrary).countErr = errUninitialized
	var b schemas.SampleBatch
	err := s.Sample(t.Context(), testAt, &b)
	if !errors.Is(err, errUninitialized) {
		t.Fatalf("err = %v", err)
	}
	if v := value(t, m.callErrors.WithLabelValues("DeviceCount", "ERROR_UNINITIALIZED")); v != 1 {
		t.Errorf("DeviceCount errors = %v", v)
	}
}

// TestCallErrorCounted: a failure that is neither "unsupported" nor "lost" leaves
// the field missing, is counted by function and logged once.
func TestCallErrorCounted(t *testing.T) {
	f, root := loadFixture(t, "h100")
	f.Devices[0].Errors = map[string]string{"PowerUsage": "ERROR_UNKNOWN"}
	s, m, logs := newTestSource(t, f, root)
	for range 3 {
		var b schemas.SampleBatch
		if err := s.Sample(t.Context(), f.At, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.GPUs) != 1 || !schemas.IsMissing(b.GPUs[0].PowerW) || b.GPUs[0].TempC != 64 {
			t.Fatalf("GPU = %+v", b.GPUs)
		}
	}
	if v := value(t, m.callErrors.WithLabelValues("PowerUsage", "ERROR_UNKNOWN")); v != 3 {
		t.Errorf("PowerUsage errors = %v, want 3", v)
	}
	if n := strings.Count(logs.String(), "NVML call failed"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs)
	}
}

func TestProcessesOnly(t *testing.T) {
	f, root := loadFixture(t, "a100_mig")
	s, _, _ := newTestSource(t, f, root)
	ps, err := s.Processes(t.Context(), f.At)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 4 || ps[0].PID != 5101 || ps[0].GPUUUID != "MIG-0f6e3d2c-1b4a-5c8d-9e7f-a1b2c3d4e5f6" {
		t.Fatalf("processes = %+v", ps)
	}
	parent := f.Devices[0]
	for _, fn := range []string{"Temperature", "MemoryInfo", "UtilizationRates", "Attributes"} {
		for _, d := range parent.MIGDevices {
			if d != nil && d.called(fn) != 0 {
				t.Errorf("Processes called %s on %s", fn, d.UUIDValue)
			}
		}
	}
	if parent.called("Temperature") != 0 {
		t.Error("Processes read the GPU's temperature")
	}
	// The slice is the caller's: a later call does not change it.
	ps[0].PID = 1
	again, err := s.Processes(t.Context(), f.At)
	if err != nil || again[0].PID != 5101 {
		t.Fatalf("second call = %+v, %v", again, err)
	}
}

func TestProcessClasses(t *testing.T) {
	tests := []struct {
		name              string
		compute, graphics bool
		want              []uint32
	}{
		{"both", true, true, []uint32{7001, 7002}},
		{"compute", true, false, []uint32{7001}},
		{"graphics", false, true, []uint32{7002}},
		{"none", false, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _, _, _ := sampleFixture(t, "v100_unsupported", func(c *Config) {
				c.ComputeProcesses, c.GraphicsProcesses = tc.compute, tc.graphics
			})
			var got []uint32
			for _, p := range b.Processes {
				got = append(got, p.PID)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("PIDs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPCIeOff(t *testing.T) {
	b, f, _, _ := sampleFixture(t, "h100", func(c *Config) { c.PCIe = false })
	if !schemas.IsMissing(b.GPUs[0].PCIeTxBytesPerS) || f.Devices[0].called("PcieThroughput") != 0 {
		t.Errorf("PCIe read although off: %+v", b.GPUs[0])
	}
}

func TestCloseAndClosed(t *testing.T) {
	f, root := loadFixture(t, "h100")
	s, _, _ := newTestSource(t, f, root)
	lib := s.lib.(*fakeLibrary)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil || lib.shutdown != 1 {
		t.Fatalf("second Close: %v, %d shutdowns", err, lib.shutdown)
	}
	var b schemas.SampleBatch
	if err := s.Sample(t.Context(), f.At, &b); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sample after Close: %v", err)
	}
}
