package nvml

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

var testAt = time.Date(2026, 12, 1, 8, 0, 1, 0, time.UTC)

// TestProcessUtilSinceLastTick: each tick averages only the samples newer than
// the newest one read before; a tick with none reads 0: NVML lists only the
// processes that ran kernels since, so a process in no sample launched nothing.
func TestProcessUtilSinceLastTick(t *testing.T) {
	f, root := loadFixture(t, "h100")
	s, _, _ := newTestSource(t, f, root)
	dev := f.Devices[0]
	util := func(at time.Time) (float32, float32) {
		t.Helper()
		var b schemas.SampleBatch
		if err := s.Sample(t.Context(), at, &b); err != nil {
			t.Fatal(err)
		}
		return b.Processes[0].SMUtil, b.Processes[0].MemUtil
	}
	if sm, mem := util(f.At); sm != 0.86 || mem != 0.41 {
		t.Fatalf("tick 1: %v/%v, want 0.86/0.41", sm, mem)
	}
	// No sample since: NVML answers ERROR_NOT_FOUND (not counted as unsupported):
	// nothing ran, 0 — not Missing, which would say the source cannot tell.
	if sm, mem := util(f.At.Add(time.Second)); sm != 0 || mem != 0 {
		t.Fatalf("tick 2: %v/%v, want 0/0", sm, mem)
	}
	dev.ProcessUtil = append(dev.ProcessUtil, processUtilSample{PID: 4242, TimeStamp: 1796112002500000, SMUtil: 40, MemUtil: 10})
	if sm, mem := util(f.At.Add(2 * time.Second)); sm != 0.40 || mem != 0.10 {
		t.Fatalf("tick 3: %v/%v, want 0.40/0.10 (only the new sample)", sm, mem)
	}
	if set := s.gpus[0].unsupported[dev.UUIDValue]; set.has(fieldProcessUtil) {
		t.Error("no new sample reported as unsupported")
	}
}

// TestProcessUtilWindow: on the first tick only samples within the window count.
func TestProcessUtilWindow(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		want   float32 // pid 4250's SM share: its sample is 16 s before the tick
	}{
		{10 * time.Second, 0}, // in no sample of the window: it ran nothing since
		{20 * time.Second, 0.05},
	} {
		t.Run(tc.window.String(), func(t *testing.T) {
			b, _, _, _ := sampleFixture(t, "h100", func(c *Config) { c.ProcessUtilWindow = tc.window })
			if got := b.Processes[1].SMUtil; !sameFloat(got, tc.want) {
				t.Errorf("SM share = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProcessNameCache: a name is read once while its PID stays on the GPU and
// read afresh after the PID has gone.
func TestProcessNameCache(t *testing.T) {
	f, root := loadFixture(t, "h100")
	s, _, _ := newTestSource(t, f, root)
	name := func() string {
		t.Helper()
		var b schemas.SampleBatch
		if err := s.Sample(t.Context(), f.At, &b); err != nil {
			t.Fatal(err)
		}
		for _, p := range b.Processes {
			if p.PID == 4242 {
				return p.ProcessName
			}
		}
		return "(absent)"
	}
	if got := name(); got != "python3" {
		t.Fatalf("name = %q", got)
	}
	if err := os.WriteFile(filepath.Join(root, "4242", "comm"), []byte("pt_main_thread\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "python3" {
		t.Fatalf("cached name = %q, want python3", got)
	}
	dev := f.Devices[0]
	compute, graphics := dev.Compute, dev.Graphics
	dev.Compute, dev.Graphics = compute[1:], nil
	if got := name(); got != "(absent)" {
		t.Fatalf("name = %q, want the process gone", got)
	}
	dev.Compute, dev.Graphics = compute, graphics
	if got := name(); got != "pt_main_thread" {
		t.Fatalf("name after the PID came back = %q, want it read again", got)
	}
}

func TestProcessNameMissingProcRoot(t *testing.T) {
	if got := readComm(filepath.Join(t.TempDir(), "nope"), 1); got != "" {
		t.Errorf("readComm = %q", got)
	}
}

// TestProcessUtilCannotSay: when NVML cannot answer (not supported: a MIG-enabled
// parent, an old driver; or any other failure) the shares stay Missing — the
// source cannot say — while a process absent from a successful answer reads 0.
func TestProcessUtilCannotSay(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail string
		want float32
	}{
		{"answered, absent", "", 0},
		{"nothing ran", "ERROR_NOT_FOUND", 0},
		{"not supported", "ERROR_NOT_SUPPORTED", schemas.Missing},
		{"failed", "ERROR_UNKNOWN", schemas.Missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, root := loadFixture(t, "h100")
			dev := f.Devices[0]
			switch tc.fail {
			case "ERROR_NOT_FOUND":
				dev.ProcessUtil = nil
			case "":
				dev.ProcessUtil = dev.ProcessUtil[:1] // pid 4242 only
			default:
				dev.Errors = map[string]string{"ProcessUtilization": tc.fail}
			}
			s, _, _ := newTestSource(t, f, root)
			var b schemas.SampleBatch
			if err := s.Sample(t.Context(), f.At, &b); err != nil {
				t.Fatal(err)
			}
			for _, p := range b.Processes {
				if p.PID == 4250 && !sameFloat(p.SMUtil, tc.want) {
					t.Errorf("pid 4250 SM share = %v, want %v", p.SMUtil, tc.want)
				}
			}
		})
	}
}
