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

// sweepCard is a card type of the sweeps, with its board power.
type sweepCard struct {
	gpu  func(string) gpu
	tdpW float32
}

var sweepCards = map[string]sweepCard{
	"H100": {h100, 700},
	"A100": {func(u string) gpu { return gpu{uuid: u, card: "A100-80GB", fbTotal: 81920} }, 400},
	"L40S": {l40s, 350},
}

// hangFamilies are the forms a hang takes, as the sources see the GPU once it
// happened (u is uniform noise in [0, 1), n the noise level).
var hangFamilies = map[string]func(s *schemas.GPUSample, n float32, u func() float32, tdp float32){
	// A collective or barrier that never completes: the kernel stays resident
	// (engine busy), no math, no memory or interconnect traffic, power well under
	// the busy phase.
	"spin": func(s *schemas.GPUSample, n float32, u func() float32, tdp float32) {
		set(s, 0.97+0.02*u(), 0.04+n*u(), n*u()/3, n*u()/2, n*1e8*u(), s.FBUsedMiB)
		s.PowerW = tdp * (0.4 + 0.05*u())
	},
	// The host side hung (a dead rank, a deadlock in Python): nothing runs.
	"host": func(s *schemas.GPUSample, n float32, u func() float32, tdp float32) {
		set(s, n*u()/4, n*u()/4, 0, n*u()/2, n*1e8*u(), s.FBUsedMiB)
		s.PowerW = tdp * (0.12 + 0.02*u())
	},
	// A data loader or storage stall: nothing runs, a trickle of reads arrives.
	"loader": func(s *schemas.GPUSample, n float32, u func() float32, tdp float32) {
		set(s, n*u()/4, n*u()/4, 0, n*u()/2, 1e6+n*1e8*u(), s.FBUsedMiB)
		s.PowerW = tdp * (0.15 + 0.02*u())
	},
}

// busyTraining is a training step's sample: math, memory and interconnect busy.
func busyTraining(s *schemas.GPUSample, u func() float32, tdp float32, mem uint32) {
	set(s, 0.9+0.08*u(), 0.6+0.2*u(), 0.35+0.2*u(), 0.3+0.2*u(), 1e9+1e9*u(), mem)
	s.PowerW = tdp * (0.8 + 0.15*u())
}

// TestHungFamilySweep generates hangs across their family — spin, host-side and
// data-loader forms, on H100, A100 and L40S, 2 and 4 GPUs, noise levels and
// durations — and checks that detection holds exactly in the region
// docs/analyzer.md states: a hang older than the window (15 min) whose noise
// stays under the flat thresholds (noise ≤ 0.03: DRAM ≤ 0.03, PCIe ≤ 5 MB/s) is
// found; a younger one or a noisier one is not. Look-alikes (checkpoints,
// evaluation, bursty inference, warm-up, memory-bound, compute-light, a phase
// change that keeps its power) are never hung, and a stuck job whose GPUs
// stopped one after another (a stall, not one hang) gets no memory_capacity
// advice while a never-busy memory-full server does.
func TestHungFamilySweep(t *testing.T) {
	fx := newFixture(t)
	now := fx.at(2*time.Hour + 15*time.Minute)
	const tk = 30 * time.Second
	type variant struct {
		family, card string
		gpus         int
		noise        float32
		dur          time.Duration
	}
	var vs []variant
	want := map[string]bool{}
	for _, fam := range []string{"host", "loader", "spin"} {
		for _, card := range []string{"A100", "H100", "L40S"} {
			for _, n := range []int{2, 4} {
				for _, noise := range []float32{0, 0.03, 0.08} {
					for _, dur := range []time.Duration{10 * time.Minute, 20 * time.Minute, time.Hour} {
						v := variant{fam, card, n, noise, dur}
						vs = append(vs, v)
						key := fmt.Sprintf("%s-%s-%dg-n%.2f-%v", fam, card, n, noise, dur)
						want[key] = dur >= 20*time.Minute && noise <= 0.03
						var uuids []string
						for i := range n {
							uuids = append(uuids, fmt.Sprintf("GPU-%s-%d", key, i))
						}
						fx.job(key, "nlp", PoolTrainingExp, "n-"+key, uuids, fx.t0, time.Time{})
						c := sweepCards[card]
						for i, uuid := range uuids {
							rng := rand.New(rand.NewPCG(uint64(len(vs)), uint64(i)))
							u := func() float32 { return rng.Float32() }
							drop := now.Add(-dur).Sub(fx.t0)
							fx.series("n-"+key, c.gpu(uuid), fx.t0, now, tk, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
								busyTraining(s, u, c.tdpW, 40000)
								if el >= drop {
									hangFamilies[fam](s, noise, u, c.tdpW)
								}
								return proc(uint32(1000+i), key, 40000, s.SMActive)
							})
						}
					}
				}
			}
		}
	}
	// Clean hangs with an isolated blip on each GPU every 14 minutes (DRAM 0.06
	// and 24 MB/s of PCIe in one sample: a watchdog's copy, a heartbeat): at
	// most one blip in any window, found.
	for _, fam := range []string{"host", "loader", "spin"} {
		key := "blips-" + fam + "-H100-4g"
		want[key] = true
		var uuids []string
		for i := range 4 {
			uuids = append(uuids, fmt.Sprintf("GPU-%s-%d", key, i))
		}
		fx.job(key, "nlp", PoolTrainingExp, "n-"+key, uuids, fx.t0, time.Time{})
		drop := now.Add(-time.Hour).Sub(fx.t0)
		for i, uuid := range uuids {
			rng := rand.New(rand.NewPCG(11, uint64(i)))
			u := func() float32 { return rng.Float32() }
			fx.series("n-"+key, h100(uuid), fx.t0, now, tk, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
				busyTraining(s, u, 700, 40000)
				if el >= drop {
					hangFamilies[fam](s, 0, u, 700)
					if (el-drop)%(14*time.Minute) == time.Duration(7+i)*time.Minute {
						s.DRAMActive, s.PCIeTxBytesPerS = 0.06, 2.4e7
					}
				}
				return proc(uint32(1500+i), key, 40000, s.SMActive)
			})
		}
	}
	// Look-alikes, each on two H100s: none is hung.
	lookalikes := map[string]func(el time.Duration, s *schemas.GPUSample, u func() float32){
		"checkpoint": func(el time.Duration, s *schemas.GPUSample, u func() float32) {
			busyTraining(s, u, 700, 60000)
			if el%(30*time.Minute) < 4*time.Minute { // writing the checkpoint: engines idle, PCIe busy
				set(s, 0, 0, 0, 0.02, 3e9, 60000)
				s.PowerW = 150
			}
		},
		"evaluation": func(el time.Duration, s *schemas.GPUSample, u func() float32) {
			busyTraining(s, u, 700, 60000)
			if el > time.Hour+30*time.Minute {
				set(s, 0.8, 0.25+0.05*u(), 0.1, 0.15, 2e8, 60000)
				s.PowerW = 400
			}
		},
		"bursty-inference": func(el time.Duration, s *schemas.GPUSample, u func() float32) {
			set(s, 0, 0, 0, 0, 3e7, 30000)
			if el%(5*time.Minute) < time.Minute {
				set(s, 0.8, 0.5, 0.3, 0.3, 2e8, 30000)
			}
			s.PowerW = 100 + 300*s.SMActive
		},
		"warm-up": func(el time.Duration, s *schemas.GPUSample, u func() float32) {
			set(s, 0.3, 0.02, 0, 0.05, 2e9, uint32(1000+el.Minutes()*400))
			s.PowerW = 200
		},
		"memory-bound": func(el time.Duration, s *schemas.GPUSample, u func() float32) {
			set(s, 0.9, 0.2, 0.01, 0.8+0.1*u(), 5e8, 70000)
			s.PowerW = 450
		},
		"compute-light": func(el time.Duration, s *schemas.GPUSample, u func() float32) {
			set(s, 0.95, 0.08, 0, 0.02, 2e6, 70000)
			s.PowerW = 300
		},
		"phase-keeps-power": func(el time.Duration, s *schemas.GPUSample, u func() float32) {
			busyTraining(s, u, 700, 60000)
			if el > time.Hour+30*time.Minute {
				set(s, 0.97, 0.1, 0.01, 0.02, 1e6, 60000)
				s.PowerW = 600 // as busy as before: computing, not spinning
			}
		},
	}
	for name, f := range lookalikes {
		uuids := []string{"GPU-" + name + "-0", "GPU-" + name + "-1"}
		start := fx.t0
		if name == "warm-up" {
			start = now.Add(-20 * time.Minute)
		}
		fx.job(name, "nlp", PoolTrainingExp, "n-"+name, uuids, start, time.Time{})
		for i, uuid := range uuids {
			rng := rand.New(rand.NewPCG(7, uint64(i)))
			fx.series("n-"+name, h100(uuid), start, now, tk, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
				f(el, s, rng.Float32)
				return proc(uint32(2000+i), name, s.FBUsedMiB, s.SMActive)
			})
		}
	}
	// A stuck server whose two GPUs stopped five minutes apart (a stall, not one
	// hang: the skew is over max_skew), memory full, and a memory-full server
	// that was never busy.
	for _, j := range []struct {
		name string
		drop [2]time.Duration // from t0
	}{{"stuck-server", [2]time.Duration{50 * time.Minute, 55 * time.Minute}}, {"quiet-server", [2]time.Duration{0, 0}}} {
		uuids := []string{"GPU-" + j.name + "-0", "GPU-" + j.name + "-1"}
		fx.job(j.name, "speech", PoolTrainingExp, "n-"+j.name, uuids, fx.t0, time.Time{})
		for i, uuid := range uuids {
			rng := rand.New(rand.NewPCG(9, uint64(i)))
			fx.series("n-"+j.name, h100(uuid), fx.t0, now, tk, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
				busyTraining(s, rng.Float32, 700, 72000)
				if el >= j.drop[i] {
					set(s, 0.96, 0.05, 0, 0.01, 1e6, 72000)
					s.PowerW = 280
				}
				return proc(uint32(3000+i), j.name, 72000, s.SMActive)
			})
		}
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
	found := map[schemas.FindingKind]map[string]bool{}
	for _, f := range hist {
		if found[f.Kind] == nil {
			found[f.Kind] = map[string]bool{}
		}
		found[f.Kind][f.Job] = true
	}
	// The region table, as docs/analyzer.md states it.
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "%-8s %-6s %-5s %-6s %-6s %s\n", "family", "card", "gpus", "noise", "dur", "hung")
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		got := found[schemas.KindHung][key]
		if got != want[key] {
			t.Errorf("%s: hung %v, want %v", key, got, want[key])
		}
		fmt.Fprintf(&tbl, "%s %v\n", key, got)
	}
	t.Logf("hung sweep (%d variants):\n%s", len(vs), tbl.String())
	for name := range lookalikes {
		if found[schemas.KindHung][name] {
			t.Errorf("look-alike %s reported hung", name)
		}
	}
	if found[schemas.KindHung]["stuck-server"] || found[schemas.KindMemoryCapacity]["stuck-server"] || found[schemas.KindWrongCard]["stuck-server"] {
		t.Errorf("stuck server: hung %v, memory_capacity %v, wrong_card %v; want none (a stall gets no advice)",
			found[schemas.KindHung]["stuck-server"], found[schemas.KindMemoryCapacity]["stuck-server"], found[schemas.KindWrongCard]["stuck-server"])
	}
	if !found[schemas.KindMemoryCapacity]["quiet-server"] {
		t.Errorf("a memory-full server never busy got no memory_capacity: %v", found)
	}
}
