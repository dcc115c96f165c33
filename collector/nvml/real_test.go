package nvml

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

var record = flag.String("record", "", "TestRealGPU: write the real GPUs' NVML values to this fixture file")

// newRealSource opens the real NVML or skips the test.
func newRealSource(t *testing.T) *Source {
	t.Helper()
	s, err := New(DefaultConfig())
	if errors.Is(err, ErrNoLibrary) {
		t.Skipf("no libnvidia-ml.so.1: %v", err)
	}
	if err != nil {
		t.Skipf("NVML present but not usable: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestRealGPU samples the machine's GPUs twice and checks the values are
// plausible. It skips without an NVIDIA driver. With -record FILE it also writes
// what NVML answered as a fixture for the fake.
func TestRealGPU(t *testing.T) {
	s := newRealSource(t)
	n, st := s.lib.DeviceCount()
	if st != success {
		t.Fatalf("DeviceCount: %v", st)
	}
	if n == 0 {
		t.Skip("NVML works but sees no GPU")
	}
	var first schemas.SampleBatch
	at := time.Now()
	if err := s.Sample(t.Context(), at, &first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // let the energy counter and utilisation samples move
	var second schemas.SampleBatch
	if err := s.Sample(t.Context(), time.Now(), &second); err != nil {
		t.Fatal(err)
	}
	if len(first.GPUs) == 0 || len(second.GPUs) != len(first.GPUs) {
		t.Fatalf("%d then %d GPU rows for %d GPUs", len(first.GPUs), len(second.GPUs), n)
	}
	for i, g := range second.GPUs {
		t.Logf("%+v", g)
		if g.TimeMs <= first.GPUs[i].TimeMs || g.GPUUUID != first.GPUs[i].GPUUUID {
			t.Errorf("row %d: time or UUID did not carry over: %+v then %+v", i, first.GPUs[i], g)
		}
		wantPrefix := "GPU-"
		if g.MIGProfile != "" {
			wantPrefix = "MIG-"
		}
		if len(g.GPUUUID) < 8 || g.GPUUUID[:4] != wantPrefix || g.Model == "" || g.Card == "" {
			t.Errorf("row %d: identity %q %q %q", i, g.GPUUUID, g.Model, g.Card)
		}
		if g.FBTotalMiB < 1024 || g.FBUsedMiB > g.FBTotalMiB {
			t.Errorf("row %d: memory %d of %d MiB", i, g.FBUsedMiB, g.FBTotalMiB)
		}
		checkRatio(t, "gpu_util", g.GPUUtil)
		if !schemas.IsMissing(g.TempC) && (g.TempC < 5 || g.TempC > 110) {
			t.Errorf("row %d: temperature %v °C", i, g.TempC)
		}
		if g.MIGProfile == "" {
			if !schemas.IsMissing(g.PowerW) && (g.PowerW < 1 || g.PowerW > 2000) {
				t.Errorf("row %d: power %v W", i, g.PowerW)
			}
			if e0 := first.GPUs[i].EnergyMilliJ; g.EnergyMilliJ < e0 {
				t.Errorf("row %d: energy counter went back: %d then %d mJ", i, e0, g.EnergyMilliJ)
			}
			for _, v := range []float32{g.PCIeTxBytesPerS, g.PCIeRxBytesPerS} {
				if !schemas.IsMissing(v) && (v < 0 || v > 512e9) {
					t.Errorf("row %d: PCIe %v B/s", i, v)
				}
			}
		}
		if !schemas.IsMissing(g.SMActive) || !schemas.IsMissing(g.TensorActive) {
			t.Errorf("row %d: DCGM profiling fields set from NVML", i)
		}
	}
	for _, p := range second.Processes {
		t.Logf("%+v", p)
		if p.PID == 0 || p.GPUUUID == "" || p.Job != "" {
			t.Errorf("process row %+v", p)
		}
		checkRatio(t, "sm_util", p.SMUtil)
		checkRatio(t, "mem_util", p.MemUtil)
	}
	if _, err := s.Processes(t.Context(), time.Now()); err != nil {
		t.Error(err)
	}
	if *record != "" {
		f, err := recordFixture(s.lib, time.Now(), s.cfg.ProcessUtilWindow, s.cfg.ProcRoot)
		if err != nil {
			t.Fatal(err)
		}
		f.Comment = "Recorded by TestRealGPU -record."
		b, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*record, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", *record)
	}
}

func checkRatio(t *testing.T, name string, v float32) {
	t.Helper()
	if !schemas.IsMissing(v) && (v < 0 || v > 1) {
		t.Errorf("%s = %v, not a ratio", name, v)
	}
}

// TestRecordRoundTrip: a fixture recorded from the fake of a fixture samples the
// same as the fixture itself, so what -record writes on a GPU node can be used
// as testdata as is.
func TestRecordRoundTrip(t *testing.T) {
	for _, name := range []string{"h100", "a100_mig", "v100_unsupported", "lost"} {
		t.Run(name, func(t *testing.T) {
			f, root := loadFixture(t, name)
			rec, err := recordFixture(f.library(), f.At, DefaultConfig().ProcessUtilWindow, root)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			var again fixture
			if err := json.Unmarshal(b, &again); err != nil {
				t.Fatal(err)
			}
			want := sampleOnce(t, f, root)
			got := sampleOnce(t, &again, writeComm(t, again.Comm))
			if len(got.GPUs) != len(want.GPUs) || len(got.Processes) != len(want.Processes) {
				t.Fatalf("re-recorded: %d GPUs, %d processes; original %d, %d",
					len(got.GPUs), len(got.Processes), len(want.GPUs), len(want.Processes))
			}
			for i := range want.GPUs {
				checkGPU(t, got.GPUs[i], want.GPUs[i])
			}
			checkProcesses(t, got.Processes, want.Processes)
		})
	}
}

func sampleOnce(t *testing.T, f *fixture, root string) schemas.SampleBatch {
	t.Helper()
	s, _, _ := newTestSource(t, f, root)
	var b schemas.SampleBatch
	if err := s.Sample(t.Context(), f.At, &b); err != nil && !errors.Is(err, ErrAllGPUsLost) {
		t.Fatal(err)
	}
	return b
}
