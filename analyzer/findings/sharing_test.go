package findings

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestSharingFor: one job per case, on the default card options.
func TestSharingFor(t *testing.T) {
	opts := DefaultConfig().CardOptions
	cases := []struct {
		name    string
		use     shareUse
		method  string
		tenants int
		frees   float64
		text    string
	}{
		{
			// 5 GiB, busy SM 8 %: one slice of seven holds it and covers 8 % × 1.5.
			name: "MIG fits", use: shareUse{card: "H100-80GB", memNeedMiB: 6000, cardMiB: 81559, smP95: 0.08, busySMP95: 0.08, activeFraction: 0.9},
			method: ShareMIG, tenants: 7, frees: 6.0 / 7, text: "MIG 1g.10gb of H100-80GB",
		},
		{
			// A steady job at SM 20 % on an L40S (no MIG): 3 MPS clients (1 / (0.2 × 1.5)),
			// memory holds 48 GiB / 9 GiB = 5.
			name: "MPS fits", use: shareUse{card: "L40S-48GB", memNeedMiB: 9216, cardMiB: 46068, smP95: 0.2, busySMP95: 0.22, activeFraction: 0.95},
			method: ShareMPS, tenants: 3, frees: 2.0 / 3, text: "MPS, 3 clients per GPU (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=33, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=9216M)",
		},
		{
			// A bursty job on an H100 whose bursts reach SM 60 %: no MIG profile up to
			// 3g covers 90 %; busy 25 % of the time, 2 replicas take turns (1 / (0.25 × 1.5) = 2.7),
			// memory would hold 4.
			name: "time-slicing fits", use: shareUse{card: "H100-80GB", memNeedMiB: 20000, cardMiB: 81559, smP95: 0.45, busySMP95: 0.6, activeFraction: 0.25},
			method: ShareTimeSlicing, tenants: 2, frees: 0.5, text: "time-slicing, 2 replicas per GPU (cap its memory to 19.5 GiB",
		},
		{
			// Busy half the time at SM 45 %: MPS (steady) gives 1 / 0.675 = 1 client.
			name: "nothing fits (steady)", use: shareUse{card: "L40S-48GB", memNeedMiB: 9000, cardMiB: 46068, smP95: 0.45, busySMP95: 0.5, activeFraction: 0.6},
			text: "fewer than 2 MPS clients fit",
		},
		{
			// Bursty but its memory need (30 GiB of 45) leaves no room for a second replica.
			name: "nothing fits (memory)", use: shareUse{card: "L40S-48GB", memNeedMiB: 30000, cardMiB: 46068, smP95: 0.4, busySMP95: 0.5, activeFraction: 0.2},
			text: "fewer than 2 time-slicing replicas fit",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sharingFor(c.use, opts)
			if got.method != c.method || got.tenants != c.tenants || math.Abs(got.frees()-c.frees) > 1e-9 {
				t.Errorf("got %s × %d freeing %.3f (%q %q); want %q × %d freeing %.3f", got.method, got.tenants, got.frees(), got.name, got.why,
					c.method, c.tenants, c.frees)
			}
			if s := got.name + got.why; !strings.Contains(s, c.text) {
				t.Errorf("says %q, want it to contain %q", s, c.text)
			}
		})
	}
}

// TestWrongCardSharing: with only an L4 configured (too small for them), two small
// jobs on H100s are told to share their GPU: the steady one MPS with 3 clients
// (24 GiB of 80 each), freeing 2/3 GPU = 16 GPU-h/day = 64 USD/day at 4 USD; the
// bursty one (busy a quarter of the time, at SM 15 %) time-slicing with 2 replicas
// (1 / (0.25 × 1.5)): no MIG profile is configured. What it frees is the finding's waste: 2/3 GPU over the 2 h window.
func TestWrongCardSharing(t *testing.T) {
	fx := newFixture(t)
	t0, now := fx.t0, fx.at(3*time.Hour)
	fx.job("steady-small", "vision", PoolDev, "n1", []string{"GPU-S"}, t0, time.Time{})
	fx.series("n1", h100("GPU-S"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.3, 0.1, 0.03, 0.1, 50e6, 20000)
		return proc(701, "steady-small", 20000, 0.1)
	})
	fx.job("bursty-small", "vision", PoolDev, "n1", []string{"GPU-B"}, t0, time.Time{})
	fx.series("n1", h100("GPU-B"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		if el%(4*time.Minute) < time.Minute {
			set(s, 0.5, 0.15, 0.1, 0.2, 50e6, 20000)
			return proc(702, "bursty-small", 20000, 0.15)
		}
		set(s, 0, 0, 0, 0, 1e6, 20000)
		return proc(702, "bursty-small", 20000, 0)
	})
	fx.flush()
	cfg := DefaultConfig()
	cfg.CardOptions = []CardOption{{Card: "L4-24GB", MemoryMiB: 23034}}
	res, err := fx.analyzer(cfg, nil).Run(t.Context(), now)
	if err != nil {
		t.Fatal(err)
	}
	got := byKind(res.Opened)[schemas.KindWrongCard]
	steady, bursty := got["steady-small"], got["bursty-small"]
	if !strings.HasPrefix(steady.Recommended, "MPS, 3 clients per GPU") || steady.Evidence["share_tenants"] != 3 ||
		math.Abs(steady.Evidence["share_frees_gpu_hours_per_day"]-16) > 1e-6 || math.Abs(steady.Evidence["share_savings_per_day"]-64) > 1e-6 ||
		math.Abs(steady.WasteGPUHours-4.0/3) > 0.01 || !strings.Contains(steady.Recommendation, "frees 0.67 GPU (16.0 GPU-h/day), 64.00 USD/day") {
		t.Errorf("steady: %q, evidence %v, waste %g: %s", steady.Recommended, steady.Evidence, steady.WasteGPUHours, steady.Recommendation)
	}
	if !strings.HasPrefix(bursty.Recommended, "time-slicing, 2 replicas per GPU") || bursty.Evidence["share_tenants"] != 2 ||
		math.Abs(bursty.Evidence["share_frees_gpus"]-0.5) > 1e-6 {
		t.Errorf("bursty: %q, evidence %v: %s", bursty.Recommended, bursty.Evidence, bursty.Recommendation)
	}
}
