package findings

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/schemas"
)

// fleetPatterns loads the five real-fleet patterns of issue 18 (an idle tenant on
// a shared GPU, a hung job, a zombie whose GPU got a new job, a memory-full
// inference server, a bursty small job on a big card), each beside its busy
// look-alike, and the cases that must raise nothing: checkpoint stalls, a
// data-loading phase, bursty online inference, a night-only job, a node whose
// collector went offline and busy neighbours on a shared GPU. It returns the pass
// time.
func fleetPatterns(fx *fixture) time.Time {
	now := fx.at(3 * time.Hour)
	t0 := fx.t0
	training := func(mem uint32) func(s *schemas.GPUSample) {
		return func(s *schemas.GPUSample) { set(s, 0.95, 0.75, 0.5, 0.45, 1e9, mem) }
	}
	pr := func(pid uint32, job string, mem uint32, sm float32) schemas.ProcessSample {
		return schemas.ProcessSample{PID: pid, ProcessName: "python3", Job: job, FBUsedMiB: mem, SMUtil: sm, MemUtil: sm / 2}
	}
	nvml := func(pid uint32, job string, mem uint32) schemas.ProcessSample {
		return schemas.ProcessSample{PID: pid, ProcessName: "python3", Job: job, FBUsedMiB: mem, SMUtil: schemas.Missing, MemUtil: schemas.Missing}
	}

	// 1. A time-sliced GPU: a notebook holding memory and doing nothing beside a
	// busy training job; and a second one with two busy tenants whose processes
	// report no activity of their own.
	fx.job("tenant-idle", "research", PoolDev, "s1", []string{"GPU-S1"}, t0, time.Time{})
	fx.job("tenant-busy", "nlp", PoolTrainingExp, "s1", []string{"GPU-S1"}, t0, time.Time{})
	fx.series("s1", h100("GPU-S1"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		training(40000)(s)
		return []schemas.ProcessSample{pr(900, "tenant-idle", 6000, 0), pr(901, "tenant-busy", 34000, 0.75)}
	})
	fx.job("nb-a", "vision", PoolDev, "s1", []string{"GPU-S2"}, t0, time.Time{})
	fx.job("nb-b", "vision", PoolDev, "s1", []string{"GPU-S2"}, t0, time.Time{})
	fx.series("s1", l40s("GPU-S2"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.6, 0.4, 0.2, 0.2, 100e6, 20000)
		return []schemas.ProcessSample{nvml(910, "nb-a", 10000), nvml(911, "nb-b", 10000)}
	})

	// A notebook whose time-slicing neighbour (busy at a low SM share) left ten
	// minutes ago: the GPU's two hours are mostly the neighbour's, so they say
	// nothing of the notebook's utilisation; its own processes say it is idle.
	gone := now.Add(-10 * time.Minute)
	fx.job("left-behind", "research", PoolDev, "s2", []string{"GPU-L1"}, t0, time.Time{})
	fx.job("neighbour-gone", "research", PoolTrainingExp, "s2", []string{"GPU-L1"}, t0, gone)
	fx.series("s2", l40s("GPU-L1"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		if t0.Add(el).Before(gone) {
			set(s, 0.3, 0.15, 0.05, 0.1, 50e6, 24000)
			return []schemas.ProcessSample{pr(920, "left-behind", 4000, 0), pr(921, "neighbour-gone", 20000, 0.15)}
		}
		set(s, 0, 0, 0, 0, 2e3, 4000)
		return []schemas.ProcessSample{pr(920, "left-behind", 4000, 0)}
	})

	// 2. A two-GPU job deadlocked in a collective 40 minutes ago: the engines spin
	// at ~100 % with SM low and no tensor, DRAM or PCIe traffic. A host-side hang
	// of another: everything at zero with memory held. And their look-alikes: a
	// job writing checkpoints (PCIe busy while compute pauses) and one whose GPUs
	// stopped one after the other.
	hang := now.Add(-40 * time.Minute)
	for _, u := range []string{"GPU-H1", "GPU-H2"} {
		fx.series("h1", h100(u), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			if t0.Add(el).Before(hang) {
				training(70000)(s)
				return []schemas.ProcessSample{pr(1000, "hung-spin", 70000, 0.75)}
			}
			set(s, 0.99, 0.04, 0, 0.005, 2e4, 70000)
			return []schemas.ProcessSample{pr(1000, "hung-spin", 70000, 0.04)}
		})
	}
	fx.job("hung-spin", "nlp", PoolTrainingProd, "h1", []string{"GPU-H1", "GPU-H2"}, t0, time.Time{})
	hostHang := now.Add(-25 * time.Minute)
	for _, u := range []string{"GPU-H3", "GPU-H4"} {
		fx.series("h1", h100(u), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			if t0.Add(el).Before(hostHang) {
				training(60000)(s)
				return []schemas.ProcessSample{pr(1001, "hung-host", 60000, 0.75)}
			}
			set(s, 0, 0, 0, 0, 3e3, 60000)
			return []schemas.ProcessSample{pr(1001, "hung-host", 60000, 0)}
		})
	}
	fx.job("hung-host", "nlp", PoolTrainingExp, "h1", []string{"GPU-H3", "GPU-H4"}, t0, time.Time{})
	for _, u := range []string{"GPU-C1", "GPU-C2"} {
		fx.series("h2", h100(u), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			if el%(30*time.Minute) >= 29*time.Minute {
				set(s, 0.05, 0.02, 0, 0.06, 3e9, 70000) // the model written out over PCIe
			} else {
				training(70000)(s)
			}
			return []schemas.ProcessSample{pr(1002, "ckpt-train", 70000, s.SMActive)}
		})
	}
	fx.job("ckpt-train", "nlp", PoolTrainingExp, "h2", []string{"GPU-C1", "GPU-C2"}, t0, time.Time{})
	for i, u := range []string{"GPU-C3", "GPU-C4"} {
		stop := now.Add(-time.Duration(70-35*i) * time.Minute)
		fx.series("h2", h100(u), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			if t0.Add(el).Before(stop) {
				training(50000)(s)
				return []schemas.ProcessSample{pr(1003, "staggered", 50000, 0.75)}
			}
			set(s, 0, 0, 0, 0, 3e3, 50000)
			return []schemas.ProcessSample{pr(1003, "staggered", 50000, 0)}
		})
	}
	fx.job("staggered", "nlp", PoolTrainingExp, "h2", []string{"GPU-C3", "GPU-C4"}, t0, time.Time{})

	// 3. A job that ended an hour ago left its process (no per-process figures:
	// an NVML-only source); ten minutes later the GPU went to a new, busy job.
	oldEnd, newStart := now.Add(-time.Hour), now.Add(-50*time.Minute)
	fx.job("old-job", "speech", PoolTrainingExp, "z1", []string{"GPU-Z1"}, t0, oldEnd)
	fx.job("new-job", "vision", PoolTrainingExp, "z1", []string{"GPU-Z1"}, newStart, time.Time{})
	fx.series("z1", h100("GPU-Z1"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		at := t0.Add(el)
		switch {
		case at.Before(oldEnd):
			training(60000)(s)
			return []schemas.ProcessSample{nvml(1100, "old-job", 60000)}
		case at.Before(newStart):
			set(s, 0, 0, 0, 0, 2e3, 5000)
			return []schemas.ProcessSample{nvml(1100, "old-job", 5000)}
		}
		training(55000)(s)
		return []schemas.ProcessSample{nvml(1100, "old-job", 5000), nvml(1101, "new-job", 50000)}
	})

	// 4. An online LLM server holding 92 % of an H100 at a few % SM with steady
	// requests; a training job as full but busy; and bursty online inference.
	fx.job("llm-serve", "nlp", PoolInferenceOnline, "m1", []string{"GPU-M1"}, t0, time.Time{})
	fx.series("m1", h100("GPU-M1"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		gr := float32(0.06 + 0.02*math.Sin(el.Minutes()/7))
		set(s, gr, gr*0.7, gr/3, 0.05, 6e6, 75000)
		return []schemas.ProcessSample{pr(1200, "llm-serve", 75000, gr*0.7)}
	})
	fx.job("train-full", "nlp", PoolTrainingExp, "m1", []string{"GPU-M2"}, t0, time.Time{})
	fx.series("m1", h100("GPU-M2"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		training(76000)(s)
		return []schemas.ProcessSample{pr(1201, "train-full", 76000, 0.75)}
	})
	fx.job("online-bursty", "speech", PoolInferenceOnline, "m1", []string{"GPU-M3"}, t0, time.Time{})
	fx.series("m1", l40s("GPU-M3"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		gr := float32(0.05)
		if int(el.Minutes())%20 < 5 {
			gr = 0.5 // a five-minute burst
		}
		set(s, gr, gr*0.75, gr/2, 0.02+0.6*gr, 1e6+gr*300e6, 22000)
		return []schemas.ProcessSample{pr(1202, "online-bursty", 22000, gr*0.75)}
	})

	// 5. A small job on an H100 busy only a third of the time (5 GB, SM ≤ 15 %
	// when it runs), and a bursty big one.
	bursty := func(job string, pid uint32, mem uint32, sm float32) sampleFunc {
		return func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			if int(el.Minutes())%12 < 4 {
				set(s, 0.4, sm, sm/4, 0.1, 80e6, mem)
				return []schemas.ProcessSample{pr(pid, job, mem, sm)}
			}
			set(s, 0, 0, 0, 0, 2e3, mem)
			return []schemas.ProcessSample{pr(pid, job, mem, 0)}
		}
	}
	fx.job("bursty-small", "vision", PoolDev, "r1", []string{"GPU-R1"}, t0, time.Time{})
	fx.series("r1", h100("GPU-R1"), t0, now, tick, bursty("bursty-small", 1300, 5000, 0.12))
	fx.job("bursty-big", "vision", PoolDev, "r1", []string{"GPU-R2"}, t0, time.Time{})
	fx.series("r1", h100("GPU-R2"), t0, now, tick, bursty("bursty-big", 1301, 5000, 0.8))

	// A night-only job: busy through the night, ended at 02:30.
	nightEnd := t0.Add(150 * time.Minute)
	fx.job("night-only", "recsys", PoolTrainingExp, "n1", []string{"GPU-N1", "GPU-N2"}, t0, nightEnd)
	for _, u := range []string{"GPU-N1", "GPU-N2"} {
		fx.series("n1", h100(u), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			if t0.Add(el).Before(nightEnd) {
				training(60000)(s)
				return []schemas.ProcessSample{pr(1400, "night-only", 60000, 0.75)}
			}
			set(s, 0, 0, 0, 0, 2e3, 2)
			return nil
		})
	}
	// A two-GPU job on a node whose collector went offline 40 minutes ago.
	offline := now.Add(-40 * time.Minute)
	fx.job("offline-node", "recsys", PoolTrainingExp, "o1", []string{"GPU-O1", "GPU-O2"}, t0, time.Time{})
	for _, u := range []string{"GPU-O1", "GPU-O2"} {
		fx.series("o1", h100(u), t0, offline, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			training(60000)(s)
			return []schemas.ProcessSample{pr(1500, "offline-node", 60000, 0.75)}
		})
	}
	fx.flush()
	return now
}

func TestFleetPatterns(t *testing.T) {
	fx := newFixture(t)
	now := fleetPatterns(fx)
	a := fx.analyzer(DefaultConfig(), &fakeBus{})
	res, err := a.Run(t.Context(), now)
	if err != nil {
		t.Fatal(err)
	}
	got := byKind(res.Opened)
	want := map[schemas.FindingKind][]string{
		schemas.KindIdle:           {"left-behind", "staggered", "tenant-idle"},
		schemas.KindZombie:         {"z1/1100"},
		schemas.KindHung:           {"hung-host", "hung-spin"},
		schemas.KindMemoryCapacity: {"llm-serve"},
		schemas.KindWrongCard:      {"bursty-small"},
		// Busy training, SM and tensor high, DRAM low: a hint, not waste.
		schemas.KindComputeBound: {"ckpt-train", "train-full"},
	}
	for _, k := range schemas.FindingKinds {
		var keys []string
		for key := range got[k] {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want[k]) {
			t.Errorf("%s: got %v, want %v", k, keys, want[k])
		}
	}

	t.Run("idle tenant", func(t *testing.T) {
		f := got[schemas.KindIdle]["tenant-idle"]
		// Its memory share of the time-sliced H100 (6,000 of the 40,000 MiB its
		// two holders hold: 0.15), as chargeback bills it, for the 30 min window.
		if f.Evidence["tenants"] != 2 || math.Abs(f.Evidence["gpus"]-0.15) > 1e-9 || math.Abs(f.Evidence["memory_share"]-0.15) > 1e-9 ||
			math.Abs(f.WasteGPUHours-0.075) > 1e-6 || math.Abs(f.WasteCost-0.3) > 1e-6 || f.Currency != "USD" ||
			!strings.Contains(f.Recommendation, "idle tenant") || !strings.Contains(f.Recommendation, "15% of their memory") {
			t.Errorf("idle tenant: evidence %v, waste %g GPU-h %g %s, %q", f.Evidence, f.WasteGPUHours, f.WasteCost, f.Currency, f.Recommendation)
		}
	})
	t.Run("idle tenant waste is what chargeback bills it as idle", func(t *testing.T) {
		f := got[schemas.KindIdle]["tenant-idle"]
		rows, err := chargeback.Compute(t.Context(), fx.s, now.Add(-30*time.Minute), now)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(rows, func(r chargeback.Row) bool { return r.Job == "tenant-idle" })
		if i < 0 {
			t.Fatal("chargeback has no row for tenant-idle")
		}
		// One tick of the window may fall either side of its edges.
		if r := rows[i]; math.Abs(r.IdleGPUHours-f.WasteGPUHours) > 0.01*f.WasteGPUHours || math.Abs(r.GPUHours-r.IdleGPUHours) > 1e-6 {
			t.Errorf("tenant-idle: chargeback %.4f GPU-h, %.4f idle; the finding's waste %.4f", r.GPUHours, r.IdleGPUHours, f.WasteGPUHours)
		}
	})
	t.Run("hung", func(t *testing.T) {
		f := got[schemas.KindHung]["hung-spin"]
		// Waste from the last busy sample: 40 min of two H100s.
		if f.Evidence["spinning_fraction"] < 0.97 || f.Evidence["baseline_sm_active_p50"] < 0.7 ||
			f.Since.After(now.Add(-39*time.Minute)) || f.Since.Before(now.Add(-41*time.Minute)) ||
			math.Abs(f.WasteGPUHours-2*40.0/60) > 0.02 || f.Currency != "USD" || !strings.Contains(f.Recommendation, "collective") {
			t.Errorf("collective hang: since %v, evidence %v, waste %g, %q", f.Since, f.Evidence, f.WasteGPUHours, f.Recommendation)
		}
		h := got[schemas.KindHung]["hung-host"]
		if h.Evidence["dead_fraction"] < 0.97 || !strings.Contains(h.Recommendation, "host side") || h.Evidence["mem_used_mib"] != 60000 {
			t.Errorf("host hang: evidence %v, %q", h.Evidence, h.Recommendation)
		}
	})
	t.Run("zombie under a new tenant", func(t *testing.T) {
		z := got[schemas.KindZombie]["z1/1100"]
		if z.Job != "old-job" || z.Team != "speech" || z.Evidence["other_tenants"] != 1 || z.Evidence["denied_mem_mib"] != 5000 ||
			!z.Since.Equal(now.Add(-time.Hour)) || !strings.Contains(z.Recommendation, "new-job") {
			t.Errorf("zombie: %+v", z)
		}
	})
	t.Run("memory capacity", func(t *testing.T) {
		f := got[schemas.KindMemoryCapacity]["llm-serve"]
		// SM p95 ≈ 5.6 % × 1.5 headroom fits one slice of seven: saves 6/7 of the card.
		if f.Recommended != "MIG 1g.10gb of H100-80GB" || math.Abs(f.Evidence["savings_per_day"]-4*6.0/7*24) > 0.1 ||
			f.Evidence["mem_used_fraction_p10"] < 0.9 || f.Severity == schemas.SeverityInfo || f.Currency != "USD" ||
			math.Abs(f.WasteGPUHours-6.0/7) > 0.01 {
			t.Errorf("memory capacity: %q, evidence %v, waste %g, severity %s", f.Recommended, f.Evidence, f.WasteGPUHours, f.Severity)
		}
	})
	t.Run("bursty small job", func(t *testing.T) {
		f := got[schemas.KindWrongCard]["bursty-small"]
		if f.Recommended != "MIG 1g.10gb of H100-80GB" || f.Evidence["active_fraction"] > 0.4 || f.Evidence["busy_sm_active_p95"] > 0.13 {
			t.Errorf("right-sizing: %q, evidence %v", f.Recommended, f.Evidence)
		}
	})

	// A later pass: the hang has scrolled out of the baseline; the finding stays
	// open with its since, and the zombie stays a zombie under its new tenant.
	later := now.Add(90 * time.Minute)
	fx.series("h1", h100("GPU-H1"), now.Add(tick), later, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.99, 0.04, 0, 0.005, 2e4, 70000)
		return []schemas.ProcessSample{pr1(1000, "hung-spin", 70000, 0.04)}
	})
	fx.series("h1", h100("GPU-H2"), now.Add(tick), later, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.99, 0.04, 0, 0.005, 2e4, 70000)
		return []schemas.ProcessSample{pr1(1000, "hung-spin", 70000, 0.04)}
	})
	fx.series("z1", h100("GPU-Z1"), now.Add(tick), later, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.95, 0.75, 0.5, 0.45, 1e9, 55000)
		return []schemas.ProcessSample{
			{PID: 1100, ProcessName: "python3", Job: "old-job", FBUsedMiB: 5000, SMUtil: schemas.Missing, MemUtil: schemas.Missing},
			{PID: 1101, ProcessName: "python3", Job: "new-job", FBUsedMiB: 50000, SMUtil: schemas.Missing, MemUtil: schemas.Missing},
		}
	})
	fx.flush()
	res2, err := a.Run(t.Context(), later)
	if err != nil {
		t.Fatal(err)
	}
	upd := byKind(res2.Updated)
	if f, ok := upd[schemas.KindHung]["hung-spin"]; !ok || f.Since.After(now.Add(-39*time.Minute)) || f.WasteGPUHours < 2*2.1 {
		t.Errorf("hung job 90 min later: %+v (updated %v)", f, keys(res2.Updated))
	}
	if _, ok := upd[schemas.KindZombie]["z1/1100"]; !ok {
		t.Errorf("zombie under a new tenant resolved or not seen 90 min later (updated %v)", keys(res2.Updated))
	}
}

func pr1(pid uint32, job string, mem uint32, sm float32) schemas.ProcessSample {
	return proc(pid, job, mem, sm)[0]
}

func keys(fs []schemas.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Kind)+":"+f.Job)
	}
	return out
}
