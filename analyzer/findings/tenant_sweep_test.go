package findings

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestIdleTenantSweep generates idle tenants of shared GPUs across their family
// — how the source reports them (time-slicing or MPS with per-process figures;
// time-slicing where NVML lists no sample for a process that launched nothing;
// a few ticks whose neighbour line was lost), their own level of activity, noise,
// how long they have been idle, on L40S, A100 and H100, each beside a busy
// neighbour — and checks that detection holds exactly in the region
// docs/analyzer.md states. Look-alikes: a tenant in a short pause (idle for less
// than the window), a tenant active above the threshold, and tenants whose
// per-process figures the source cannot give (MPS attributing every client's
// work to its server process; no per-process figure at all): none is idle, and
// the busy neighbour never is.
func TestIdleTenantSweep(t *testing.T) {
	fx := newFixture(t)
	now := fx.at(2*time.Hour + 15*time.Minute)
	const tk = 30 * time.Second
	cards := map[string]func(string) gpu{
		"L40S": l40s,
		"A100": func(u string) gpu { return gpu{uuid: u, card: "A100-80GB", fbTotal: 81920} },
		"H100": h100,
	}
	type variant struct {
		mode, card   string
		level, noise float32
		dur          time.Duration
	}
	var vs []variant
	for _, mode := range []string{"timesliced", "mps", "timesliced-absent", "timesliced-lost", "mps-server", "no-figures"} {
		levels := []float32{0, 0.02, 0.1}
		if mode != "timesliced" && mode != "mps" {
			levels = []float32{0} // the tenant has no figure of its own, or a few ticks lack one
		}
		for _, card := range []string{"A100", "H100", "L40S"} {
			for _, level := range levels {
				for _, noise := range []float32{0, 0.02} {
					for _, dur := range []time.Duration{20 * time.Minute, 40 * time.Minute, 2 * time.Hour} {
						vs = append(vs, variant{mode, card, level, noise, dur})
					}
				}
			}
		}
	}
	want := map[string]bool{}
	for vi, v := range vs {
		key := fmt.Sprintf("%s-%s-l%.2f-n%.2f-%v", v.mode, v.card, v.level, v.noise, v.dur)
		// Idle when it has been idle for the window (30 min) and a pass, its own
		// figures (or their absence beside a neighbour's) under the 5 % threshold;
		// never when the source cannot tell its work from its neighbour's.
		want["idle-"+key] = v.dur >= 40*time.Minute && v.level+v.noise < 0.05 && v.mode != "mps-server" && v.mode != "no-figures"
		want["busy-"+key] = false
		u := "GPU-" + key
		fx.job("idle-"+key, "research", PoolDev, "n-"+key, []string{u}, fx.t0, time.Time{})
		fx.job("busy-"+key, "nlp", PoolTrainingExp, "n-"+key, []string{u}, fx.t0, time.Time{})
		rng := rand.New(rand.NewPCG(uint64(vi), 39))
		r := func() float32 { return rng.Float32() }
		quiet := now.Add(-v.dur).Sub(fx.t0)
		fx.series("n-"+key, cards[v.card](u), fx.t0, now, tk, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			mine := float32(0.4 + 0.1*r()) // the tenant's own share while it works
			if el >= quiet {
				mine = v.level + v.noise*r()
			}
			theirs := 0.55 + 0.1*r()
			set(s, min(1, theirs+mine+0.1), min(1, theirs+mine), 0.3*min(1, theirs+mine), 0.3+0.1*r(), 5e8, 30000)
			s.PowerW = 300
			idle := schemas.ProcessSample{PID: 1, ProcessName: "python3", Job: "idle-" + key, FBUsedMiB: 8000, SMUtil: mine, MemUtil: mine / 2}
			busy := schemas.ProcessSample{PID: 2, ProcessName: "python3", Job: "busy-" + key, FBUsedMiB: 22000, SMUtil: theirs, MemUtil: 0.3}
			switch v.mode {
			case "timesliced-absent", "timesliced-lost":
				if el >= quiet { // NVML lists no sample for a process that launched nothing
					idle.SMUtil, idle.MemUtil = schemas.Missing, schemas.Missing
				}
				if v.mode == "timesliced-lost" && el >= quiet && el%(10*time.Minute) == 0 {
					return []schemas.ProcessSample{idle} // the neighbour's line of this tick was lost
				}
			case "mps-server":
				// MPS: the clients' work is the server's in NVML's answer.
				server := schemas.ProcessSample{PID: 3, ProcessName: "nvidia-cuda-mps-server", FBUsedMiB: 500, SMUtil: min(1, theirs+mine), MemUtil: 0.3}
				idle.SMUtil, idle.MemUtil, busy.SMUtil, busy.MemUtil = schemas.Missing, schemas.Missing, schemas.Missing, schemas.Missing
				return []schemas.ProcessSample{idle, busy, server}
			case "no-figures":
				idle.SMUtil, idle.MemUtil, busy.SMUtil, busy.MemUtil = schemas.Missing, schemas.Missing, schemas.Missing, schemas.Missing
			}
			return []schemas.ProcessSample{idle, busy}
		})
	}
	fx.flush()
	a := fx.analyzer(DefaultConfig(), nil)
	for at := fx.at(65 * time.Minute); !at.After(now); at = at.Add(5 * time.Minute) {
		if _, err := a.Run(t.Context(), at); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := a.History(t.Context(), fx.t0, now)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range hist {
		if f.Kind == schemas.KindIdle {
			found[f.Job] = true
		}
	}
	var tbl strings.Builder
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		if found[key] != want[key] {
			t.Errorf("%s: idle %v, want %v", key, found[key], want[key])
		}
		if strings.HasPrefix(key, "idle-") {
			fmt.Fprintf(&tbl, "%s %v\n", strings.TrimPrefix(key, "idle-"), found[key])
		}
	}
	t.Logf("idle tenant sweep (%d variants):\n%s", len(vs), tbl.String())
}
