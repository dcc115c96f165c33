package dcgm

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/schemas"
)

type testSource struct {
	*Source
	eng    *fakeEngine
	lister *fixtureLister
	events []Event
	reg    *prometheus.Registry
}

func newTestSource(t testing.TB, name string, cfg Config) *testSource {
	t.Helper()
	eng := newFakeEngine(t, name)
	ts := &testSource{eng: eng, lister: newFixtureLister(eng.fx), reg: prometheus.NewRegistry()}
	s, err := newSource(cfg, eng, ts.lister,
		WithClock(func() time.Time { return eng.fx.StartedAt }),
		WithEventHandler(func(e Event) { ts.events = append(ts.events, e) }),
		WithMetrics(NewMetrics(ts.reg)))
	if err != nil {
		t.Fatalf("newSource(%s): %v", name, err)
	}
	ts.Source = s
	return ts
}

func (ts *testSource) sample(t testing.TB, at time.Time) *schemas.SampleBatch {
	t.Helper()
	var b schemas.SampleBatch
	if err := ts.Sample(t.Context(), at, &b); err != nil {
		t.Fatalf("Sample: %v", err)
	}
	return &b
}

func near(a float32, b float64) bool { return math.Abs(float64(a)-b) < 1e-4*math.Max(1, math.Abs(b)) }

// TestRecordedGolden runs every fixture through the source and compares the whole
// batch and the events with a golden file.
func TestRecordedGolden(t *testing.T) {
	for _, name := range []string{"h100", "a100_mig", "consumer", "blank"} {
		t.Run(name, func(t *testing.T) {
			ts := newTestSource(t, name, DefaultConfig())
			b := ts.sample(t, ts.eng.fx.SampledAt)
			checkGolden(t, name, b, ts.events)
		})
	}
}

func TestH100AllFields(t *testing.T) {
	ts := newTestSource(t, "h100", DefaultConfig())
	b := ts.sample(t, ts.eng.fx.SampledAt)
	if len(b.GPUs) != 8 {
		t.Fatalf("got %d GPU rows, want 8", len(b.GPUs))
	}
	g := b.GPUs[0]
	checks := []struct {
		name string
		got  float32
		want float64
	}{
		{"gr_engine_active", g.GrEngineActive, 0.9812},
		{"sm_active", g.SMActive, 0.8734},
		{"sm_occupancy", g.SMOccupancy, 0.4521},
		{"tensor_active", g.TensorActive, 0.6123},
		{"dram_active", g.DRAMActive, 0.3912},
		{"gpu_util (100 % → ratio)", g.GPUUtil, 1},
		{"pcie_tx_bytes_per_s", g.PCIeTxBytesPerS, 1283741},
		{"pcie_rx_bytes_per_s", g.PCIeRxBytesPerS, 51234871},
		{"power_w", g.PowerW, 612.44},
		{"temp_c", g.TempC, 61},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if g.FBTotalMiB != 81559 || g.FBUsedMiB != 78211 || g.EnergyMilliJ != 93511870221 {
		t.Errorf("memory/energy = %d/%d MiB, %d mJ", g.FBUsedMiB, g.FBTotalMiB, g.EnergyMilliJ)
	}
	if g.Card != "H100-80GB" || g.Model != "NVIDIA H100 80GB HBM3" || g.MIGProfile != "" || g.GPUIndex != 0 {
		t.Errorf("identity = %q %q %q %d", g.Model, g.Card, g.MIGProfile, g.GPUIndex)
	}
	if b.GPUs[7].ClockEventReasons != 4 || b.GPUs[3].ClockEventReasons != 1 {
		t.Errorf("clock event reasons = %#x, %#x", b.GPUs[7].ClockEventReasons, b.GPUs[3].ClockEventReasons)
	}
	if b.GPUs[2].XID != 79 || b.GPUs[1].XID != 0 {
		t.Errorf("XIDs = %d on GPU 2, %d on GPU 1; want 79, 0", b.GPUs[2].XID, b.GPUs[1].XID)
	}
	// Profiling fields are watched because GetSupportedMetricGroups lists them.
	if w := ts.eng.activeWatches()[entity{entityGPU, 0}]; !slices.Contains(w, fidProfSMActive) || slices.Contains(w, fidPCIeTxKiB) {
		t.Errorf("GPU 0 watches %v", w)
	}
}

func TestH100Processes(t *testing.T) {
	ts := newTestSource(t, "h100", DefaultConfig())
	b := ts.sample(t, ts.eng.fx.SampledAt)
	if len(b.Processes) != 4 {
		t.Fatalf("got %d processes, want 4", len(b.Processes))
	}
	tests := []struct {
		name        string
		pid         uint32
		sm, mem     float64 // NaN: Missing
		processName string
	}{
		{"DCGM stats replace missing shares", 41873, 0.87, 0.39, "python3"},
		{"DCGM gives the missing name", 41874, 0.86, 0.38, "python3"},
		{"blank DCGM stats keep the lister's", 52011, 0.44, 0.52, "tritonserver"},
		{"no DCGM stats keep the lister's", 9917, math.NaN(), math.NaN(), "jupyter-kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := slices.IndexFunc(b.Processes, func(p schemas.ProcessSample) bool { return p.PID == tt.pid })
			p := b.Processes[i]
			for _, c := range []struct {
				col  string
				got  float32
				want float64
			}{{"sm_util", p.SMUtil, tt.sm}, {"mem_util", p.MemUtil, tt.mem}} {
				if math.IsNaN(c.want) != schemas.IsMissing(c.got) || !math.IsNaN(c.want) && !near(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.col, c.got, c.want)
				}
			}
			if p.ProcessName != tt.processName || p.TimeMs != ts.eng.fx.SampledAt.UnixMilli() {
				t.Errorf("name %q at %d", p.ProcessName, p.TimeMs)
			}
		})
	}
}

func TestA100MIG(t *testing.T) {
	ts := newTestSource(t, "a100_mig", DefaultConfig())
	b := ts.sample(t, ts.eng.fx.SampledAt)
	type row struct {
		uuidPrefix, profile string
		fbTotal             uint32
		share               float64
	}
	want := []row{
		{"MIG-", "3g.40gb", 40192, 3.0 / 7},
		{"MIG-", "2g.20gb", 19968, 2.0 / 7},
		{"MIG-", "1g.10gb", 9728, 1.0 / 7},
		{"MIG-GPU-", "1g.10gb", 0, 1.0 / 7},
		{"GPU-", "", 81920, 1},
	}
	if len(b.GPUs) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(b.GPUs), len(want), b.GPUs)
	}
	for i, w := range want {
		g := b.GPUs[i]
		if !strings.HasPrefix(g.GPUUUID, w.uuidPrefix) || g.MIGProfile != w.profile || g.FBTotalMiB != w.fbTotal || g.Card != "A100-80GB" {
			t.Errorf("row %d = %s %q %d MiB %s, want %s… %q %d MiB A100-80GB", i, g.GPUUUID, g.MIGProfile, g.FBTotalMiB, g.Card, w.uuidPrefix, w.profile, w.fbTotal)
		}
		if i < 4 {
			if !near(g.PowerW, 287.5*w.share) || g.EnergyMilliJ != uint64(70000000000*w.share) {
				t.Errorf("row %d power %v W energy %d mJ, want share %.3f of 287.5 W / 7e10 mJ", i, g.PowerW, g.EnergyMilliJ, w.share)
			}
			if g.XID != 79 || g.TempC != 47 || g.GPUIndex != 0 {
				t.Errorf("row %d xid %d temp %v index %d", i, g.XID, g.TempC, g.GPUIndex)
			}
			if !schemas.IsMissing(g.GPUUtil) || !schemas.IsMissing(g.PCIeTxBytesPerS) {
				t.Errorf("row %d: GPU util and PCIe are not reported per MIG instance, got %v %v", i, g.GPUUtil, g.PCIeTxBytesPerS)
			}
		}
	}
	// The instance without a MIG UUID in DCGM gets the legacy form; its blank
	// profiling values are Missing.
	if g := b.GPUs[3]; g.GPUUUID != "MIG-"+ts.gpus[0].UUID+"/14/0" || !schemas.IsMissing(g.SMActive) {
		t.Errorf("row 3 = %s sm %v", g.GPUUUID, g.SMActive)
	}
	if g := b.GPUs[0]; !near(g.SMActive, 0.8012) || !near(g.TensorActive, 0.5523) || g.FBUsedMiB != 38011 {
		t.Errorf("3g.40gb row: sm %v tensor %v used %d", g.SMActive, g.TensorActive, g.FBUsedMiB)
	}
	// The XID from the day before the source started is history.
	if g := b.GPUs[4]; g.XID != 0 || !near(g.GPUUtil, 0) || g.ClockEventReasons != 1 {
		t.Errorf("whole GPU 1: xid %d util %v clocks %d", g.XID, g.GPUUtil, g.ClockEventReasons)
	}
	if len(ts.events) != 1 || ts.events[0].Kind != EventXID || ts.events[0].XID != 79 || ts.events[0].GPUUUID != ts.gpus[0].UUID {
		t.Errorf("events = %+v, want one XID 79 on GPU 0", ts.events)
	}
	// MIG processes keep the lister's values: DCGM's process stats are per GPU.
	for _, p := range b.Processes {
		if !schemas.IsMissing(p.SMUtil) {
			t.Errorf("process %d on %s: sm_util %v, want Missing", p.PID, p.GPUUUID, p.SMUtil)
		}
	}
	// The MIG GPU's physical entity is watched for power and the like, its
	// instances for memory and profiling.
	w := ts.eng.activeWatches()
	if g := w[entity{entityGPU, 0}]; slices.Contains(g, fidProfSMActive) || !slices.Contains(g, fidPower) {
		t.Errorf("GPU 0 watches %v", g)
	}
	if gi := w[entity{entityGPUInstance, 0}]; !slices.Contains(gi, fidProfSMActive) || slices.Contains(gi, fidPower) || slices.Contains(gi, fidProfPCIeTx) {
		t.Errorf("GPU instance 0 watches %v", gi)
	}
}

func TestConsumerWithoutProfiling(t *testing.T) {
	ts := newTestSource(t, "consumer", DefaultConfig())
	b := ts.sample(t, ts.eng.fx.SampledAt)
	g := b.GPUs[0]
	for name, v := range map[string]float32{"gr_engine_active": g.GrEngineActive, "sm_active": g.SMActive,
		"sm_occupancy": g.SMOccupancy, "tensor_active": g.TensorActive, "dram_active": g.DRAMActive} {
		if !schemas.IsMissing(v) {
			t.Errorf("%s = %v, want Missing on a GPU without profiling", name, v)
		}
	}
	if !near(g.GPUUtil, 0.93) || !near(g.PCIeTxBytesPerS, 48211*1024) || !near(g.PCIeRxBytesPerS, 1200331*1024) || !near(g.PowerW, 331.2) {
		t.Errorf("util %v tx %v rx %v power %v", g.GPUUtil, g.PCIeTxBytesPerS, g.PCIeRxBytesPerS, g.PowerW)
	}
	if g.Card != "RTX3090-24GB" {
		t.Errorf("card %q", g.Card)
	}
	if b.GPUs[1].EnergyMilliJ != 0 {
		t.Errorf("GPU 1 energy %d, want 0 (NOT_SUPPORTED)", b.GPUs[1].EnergyMilliJ)
	}
	if w := ts.eng.activeWatches()[entity{entityGPU, 0}]; slices.Contains(w, fidProfSMActive) || !slices.Contains(w, fidPCIeTxKiB) {
		t.Errorf("GPU 0 watches %v", w)
	}
	// No process accounting: the lister's process goes out as listed.
	if p := b.Processes[0]; p.PID != 3301 || !schemas.IsMissing(p.SMUtil) {
		t.Errorf("process %+v", p)
	}
	u0, u1 := ts.gpus[0].UUID, ts.gpus[1].UUID
	want := strings.NewReader(`
# HELP gpupool_collector_dcgm_field_supported 1 if DCGM reports the sample column (trace format name, e.g. sm_active) for the GPU or MIG instance, 0 if it stays missing.
# TYPE gpupool_collector_dcgm_field_supported gauge
` + supportedLines(u0, map[string]int{"energy_mj": 1}) + supportedLines(u1, map[string]int{"energy_mj": 0}))
	if err := testutil.GatherAndCompare(ts.reg, want, "gpupool_collector_dcgm_field_supported"); err != nil {
		t.Error(err)
	}
}

// supportedLines renders the field_supported gauges of a GPU without profiling.
func supportedLines(uuid string, override map[string]int) string {
	var sb strings.Builder
	names := slices.Clone(columnNames[1:])
	slices.Sort(names)
	for _, n := range names {
		v := 1
		switch n {
		case "gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active":
			v = 0
		}
		if o, ok := override[n]; ok {
			v = o
		}
		sb.WriteString(`gpupool_collector_dcgm_field_supported{field="` + n + `",gpu_uuid="` + uuid + `"} ` + string(rune('0'+v)) + "\n")
	}
	return sb.String()
}

func TestBlankValues(t *testing.T) {
	ts := newTestSource(t, "blank", DefaultConfig())
	b := ts.sample(t, ts.eng.fx.SampledAt)
	g := b.GPUs[0]
	for name, v := range map[string]float32{
		"sm_active (FP64 blank)":              g.SMActive,
		"sm_occupancy (FP64 NOT_FOUND)":       g.SMOccupancy,
		"tensor_active (FP64 NOT_SUPPORTED)":  g.TensorActive,
		"dram_active (FP64 NOT_PERMISSIONED)": g.DRAMActive,
		"pcie_tx (INT64 NOT_FOUND)":           g.PCIeTxBytesPerS,
		"pcie_rx (status NOT_SUPPORTED)":      g.PCIeRxBytesPerS,
		"power (status NO_DATA)":              g.PowerW,
		"temp (INT32 blank)":                  g.TempC,
	} {
		if !schemas.IsMissing(v) {
			t.Errorf("%s = %v, want Missing", name, v)
		}
	}
	if g.GrEngineActive != 1 {
		t.Errorf("gr_engine_active 1.0000002 → %v, want clamped to 1", g.GrEngineActive)
	}
	if !near(g.GPUUtil, 0.45) {
		t.Errorf("gpu_util as a double 45 → %v, want 0.45", g.GPUUtil)
	}
	if g.EnergyMilliJ != 0 || g.FBUsedMiB != 0 || g.ClockEventReasons != 0 || g.XID != 0 {
		t.Errorf("stale energy %d, blank fb_used %d, clocks %d, xid %d: want 0", g.EnergyMilliJ, g.FBUsedMiB, g.ClockEventReasons, g.XID)
	}
	if g.FBTotalMiB != 81559 {
		t.Errorf("fb_total %d", g.FBTotalMiB)
	}
	// NOT_SUPPORTED lowers the gauge; a blank does not.
	for _, c := range []struct {
		field string
		want  float64
	}{{"tensor_active", 0}, {"pcie_rx_bytes_per_s", 0}, {"sm_active", 1}, {"power_w", 1}} {
		if got := testutil.ToFloat64(ts.m.fieldSupported.WithLabelValues(g.GPUUUID, c.field)); got != c.want {
			t.Errorf("field_supported{%s} = %v, want %v", c.field, got, c.want)
		}
	}
}

func TestXIDReportedOnce(t *testing.T) {
	ts := newTestSource(t, "h100", DefaultConfig())
	at := ts.eng.fx.SampledAt
	b := ts.sample(t, at)
	if b.GPUs[2].XID != 79 {
		t.Fatalf("first tick XID %d, want 79", b.GPUs[2].XID)
	}
	b = ts.sample(t, at.Add(time.Second))
	if b.GPUs[2].XID != 0 {
		t.Errorf("second tick repeats XID %d", b.GPUs[2].XID)
	}
	// A later XID with the same code is a new one.
	ts.eng.set(entity{entityGPU, 2}, value{Field: fidXID, Type: typeInt64, Int: 79, TSMicros: at.Add(1500 * time.Millisecond).UnixMicro()})
	b = ts.sample(t, at.Add(2*time.Second))
	if b.GPUs[2].XID != 79 {
		t.Errorf("third tick XID %d, want 79", b.GPUs[2].XID)
	}
	xids := 0
	for _, e := range ts.events {
		if e.Kind == EventXID {
			xids++
		}
	}
	if xids != 2 {
		t.Errorf("%d XID events, want 2", xids)
	}
	if got := testutil.ToFloat64(ts.m.events.WithLabelValues("xid", "")); got != 2 {
		t.Errorf("events_total{kind=xid} = %v", got)
	}
}

func TestHealthIncidentsOnce(t *testing.T) {
	ts := newTestSource(t, "h100", DefaultConfig())
	at := ts.eng.fx.SampledAt
	health := func() []Event {
		var out []Event
		for _, e := range ts.events {
			if e.Kind == EventHealth {
				out = append(out, e)
			}
		}
		return out
	}
	ts.sample(t, at)
	ts.sample(t, at.Add(time.Second))
	if h := health(); len(h) != 1 || h[0].System != "pcie" || h[0].Severity != "warning" || h[0].GPUUUID != ts.gpus[5].UUID || h[0].GPUIndex != 5 || h[0].Code != 35 {
		t.Fatalf("health events after two ticks = %+v, want one PCIe warning on GPU 5", h)
	}
	saved := ts.eng.health
	ts.eng.health = nil
	ts.sample(t, at.Add(2*time.Second))
	ts.eng.health = saved
	ts.sample(t, at.Add(3*time.Second))
	if h := health(); len(h) != 2 {
		t.Errorf("an incident that clears and returns is new again; got %d events", len(h))
	}
	if got := testutil.ToFloat64(ts.m.events.WithLabelValues("health", "pcie")); got != 2 {
		t.Errorf("events_total{kind=health,system=pcie} = %v", got)
	}
}

func TestStaleValues(t *testing.T) {
	ts := newTestSource(t, "h100", DefaultConfig())
	// 40 s later nothing was refreshed: everything but the memory size is stale.
	b := ts.sample(t, ts.eng.fx.SampledAt.Add(40*time.Second))
	g := b.GPUs[0]
	if !schemas.IsMissing(g.SMActive) || !schemas.IsMissing(g.PowerW) || g.EnergyMilliJ != 0 {
		t.Errorf("stale values reported: sm %v power %v energy %d", g.SMActive, g.PowerW, g.EnergyMilliJ)
	}
	if g.FBTotalMiB != 81559 {
		t.Errorf("fb_total %d, want the inventory's", g.FBTotalMiB)
	}
}

func TestWatchFallbacks(t *testing.T) {
	t.Run("host engine refuses the deprecated PCIe fields", func(t *testing.T) {
		eng := newFakeEngine(t, "consumer")
		eng.rejects = []uint16{fidPCIeTxKiB}
		s, err := newSource(DefaultConfig(), eng, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b schemas.SampleBatch
		if err := s.Sample(t.Context(), eng.fx.SampledAt, &b); err != nil {
			t.Fatal(err)
		}
		if g := b.GPUs[0]; !schemas.IsMissing(g.PCIeTxBytesPerS) || !near(g.GPUUtil, 0.93) {
			t.Errorf("pcie %v util %v", g.PCIeTxBytesPerS, g.GPUUtil)
		}
		if got := testutil.ToFloat64(s.m.fieldSupported.WithLabelValues(b.GPUs[0].GPUUUID, "pcie_tx_bytes_per_s")); got != 0 {
			t.Errorf("field_supported{pcie_tx} = %v", got)
		}
	})
	t.Run("profiling watch refused", func(t *testing.T) {
		eng := newFakeEngine(t, "h100")
		eng.rejects = []uint16{fidProfSMActive}
		s, err := newSource(DefaultConfig(), eng, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b schemas.SampleBatch
		if err := s.Sample(t.Context(), eng.fx.SampledAt, &b); err != nil {
			t.Fatal(err)
		}
		if g := b.GPUs[0]; !schemas.IsMissing(g.SMActive) || !near(g.PowerW, 612.44) {
			t.Errorf("sm %v power %v", g.SMActive, g.PowerW)
		}
	})
	t.Run("nothing can be watched", func(t *testing.T) {
		eng := newFakeEngine(t, "h100")
		eng.rejects = []uint16{fidFBUsed}
		cfg := DefaultConfig()
		cfg.Fields = []string{"DCGM_FI_DEV_FB_USED"}
		if _, err := newSource(cfg, eng, nil); err == nil {
			t.Error("newSource succeeded with every watch refused")
		}
	})
}

func TestConfiguredFields(t *testing.T) {
	eng := newFakeEngine(t, "h100")
	cfg := DefaultConfig()
	cfg.Fields = []string{"DCGM_FI_PROF_SM_ACTIVE", "dcgm_power_usage", "1611"}
	s, err := newSource(cfg, eng, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := eng.activeWatches()[entity{entityGPU, 0}]
	slices.Sort(got)
	if want := []uint16{fidPower, fidProfSMActive, fidEnergyJoules}; !slices.Equal(got, want) {
		t.Errorf("watched %v, want %v", got, want)
	}
	var b schemas.SampleBatch
	if err := s.Sample(t.Context(), eng.fx.SampledAt, &b); err != nil {
		t.Fatal(err)
	}
	if g := b.GPUs[0]; !schemas.IsMissing(g.TensorActive) || !near(g.SMActive, 0.8734) {
		t.Errorf("tensor %v sm %v", g.TensorActive, g.SMActive)
	}
}

func TestSampleErrors(t *testing.T) {
	t.Run("all reads fail", func(t *testing.T) {
		ts := newTestSource(t, "h100", DefaultConfig())
		ts.eng.latestErr = errors.New("host engine connection lost")
		var b schemas.SampleBatch
		if err := ts.Sample(t.Context(), ts.eng.fx.SampledAt, &b); err == nil || len(b.GPUs) != 0 {
			t.Errorf("err %v, %d rows", err, len(b.GPUs))
		}
	})
	t.Run("lister fails", func(t *testing.T) {
		ts := newTestSource(t, "h100", DefaultConfig())
		ts.lister.err = errors.New("nvml: GPU is lost")
		b := ts.sample(t, ts.eng.fx.SampledAt)
		if len(b.GPUs) != 8 || len(b.Processes) != 0 {
			t.Errorf("%d GPUs %d processes", len(b.GPUs), len(b.Processes))
		}
		if got := testutil.ToFloat64(ts.m.errors.WithLabelValues("processes")); got != 1 {
			t.Errorf("errors_total{processes} = %v", got)
		}
	})
	t.Run("closed", func(t *testing.T) {
		ts := newTestSource(t, "h100", DefaultConfig())
		if err := ts.Close(); err != nil || !ts.eng.closed {
			t.Fatalf("Close: %v, engine closed %v", err, ts.eng.closed)
		}
		if err := ts.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		var b schemas.SampleBatch
		if err := ts.Sample(t.Context(), ts.eng.fx.SampledAt, &b); !errors.Is(err, ErrClosed) {
			t.Errorf("Sample after Close: %v", err)
		}
		if n := testutil.CollectAndCount(ts.m.fieldSupported); n != 0 {
			t.Errorf("%d field_supported series left after Close", n)
		}
	})
	t.Run("no GPUs", func(t *testing.T) {
		eng := newFakeEngine(t, "h100")
		eng.fx.SupportedGPUs = nil
		if _, err := newSource(DefaultConfig(), eng, nil); !errors.Is(err, ErrNoGPUs) {
			t.Errorf("err %v, want ErrNoGPUs", err)
		}
	})
}

// TestProcessFiguresAbsence: on recorded values, a figure the lister gave for
// this tick stays (NVML's 0: the process launched nothing since the last sample),
// although DCGM's statistics of the process's life say 87 %; DCGM fills only what
// the lister could not say, and its valid 0 is "nothing ran" (0), not Missing;
// with neither, the process stays Missing (cannot say).
func TestProcessFiguresAbsence(t *testing.T) {
	ts := newTestSource(t, "h100", DefaultConfig())
	for i := range ts.lister.procs {
		if ts.lister.procs[i].PID == 41873 {
			ts.lister.procs[i].SMUtil, ts.lister.procs[i].MemUtil = 0, 0
		}
	}
	recs := ts.eng.fx.PIDInfo["41874"]
	for i := range recs {
		recs[i].SMUtil, recs[i].MemUtil = 0, 0
	}
	b := ts.sample(t, ts.eng.fx.SampledAt)
	for _, tt := range []struct {
		pid     uint32
		sm, mem float64 // NaN: Missing
	}{{41873, 0, 0}, {41874, 0, 0}, {52011, 0.44, 0.52}, {9917, math.NaN(), math.NaN()}} {
		i := slices.IndexFunc(b.Processes, func(p schemas.ProcessSample) bool { return p.PID == tt.pid })
		if i < 0 {
			t.Fatalf("process %d not sampled", tt.pid)
		}
		p := b.Processes[i]
		for _, c := range []struct {
			col  string
			got  float32
			want float64
		}{{"sm_util", p.SMUtil, tt.sm}, {"mem_util", p.MemUtil, tt.mem}} {
			if math.IsNaN(c.want) != schemas.IsMissing(c.got) || !math.IsNaN(c.want) && !near(c.got, c.want) {
				t.Errorf("process %d: %s = %v, want %v", tt.pid, c.col, c.got, c.want)
			}
		}
	}
}
