package simrun

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkEnforcementWeek runs the demo fleet (2 clusters × 4 nodes × 8 GPUs,
// seed 1) for a simulated week, with enforcement off and then on (same seed, same
// job arrivals), at the demo's load and at a congested one, and reports
// utilisation, effective utilisation, idle-while-allocated and zombie-held GPU-hours,
// and the waiting jobs' p95 queue wait (requeued attempts apart) for each. Run it with -benchtime 1x.
func BenchmarkEnforcementWeek(b *testing.B) {
	for _, load := range []float64{0.75, 0.95} {
		for _, adm := range admissions {
			b.Run(fmt.Sprintf("load=%.2f/admission=%s", load, adm.name), func(b *testing.B) {
				benchWeek(b, load, adm.on, adm.placed)
			})
		}
	}
}

// admissions are who admits the fleet's jobs: the fleet's own schedulers, or
// gpupool's scheduler in front of them (Gate), counting GPUs per card and
// cluster or placing jobs on nodes (the demo's default).
var admissions = []struct {
	name   string
	on     bool
	placed bool
}{{"fleet", false, false}, {"scheduler", true, false}, {"scheduler-placed", true, true}}

func benchWeek(b *testing.B, load float64, admission, placed bool) {
	{
		{
			var off, on Report
			for b.Loop() {
				cfg := DefaultConfig()
				cfg.Sim.Start, cfg.Sim.Load, cfg.Admission, cfg.Placed = start, load, admission, placed
				cfg.Enforce = false
				var err error
				if off, err = Run(b.Context(), cfg); err != nil {
					b.Fatal(err)
				}
				cfg.Enforce = true
				if on, err = Run(b.Context(), cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("\n%s\n%s\nactions: %v", off, on, on.Actions)
			b.ReportMetric(100*off.Utilisation, "util_off_%")
			b.ReportMetric(100*on.Utilisation, "util_on_%")
			b.ReportMetric(100*off.Effective, "effective_off_%")
			b.ReportMetric(100*on.Effective, "effective_on_%")
			b.ReportMetric(off.IdleGPUh+off.ZombieGPUh, "wasted_off_GPUh")
			b.ReportMetric(on.IdleGPUh+on.ZombieGPUh, "wasted_on_GPUh")
			b.ReportMetric(off.WaitP95.Hours(), "wait_p95_off_h")
			b.ReportMetric(on.WaitP95.Hours(), "wait_p95_on_h")
			b.ReportMetric(float64(on.Actions["reclaim ok"]+on.Actions["kill ok"]), "actions")
			if off.Refused+on.Refused > 0 {
				b.Errorf("the scheduler refused %d jobs", off.Refused+on.Refused)
			}
		}
	}
}

// BenchmarkEnforcementDays runs the demo's day (the demo fleet at load 0.75,
// 2026-12-02) for seeds 1 to 10, enforcement off and on, and counts the days on
// which enforcement lowers the waiting jobs' p95 wait, raises effective
// utilisation and lowers the idle GPU-hours: one day's p95 (the 8th-longest of
// about 150 waits) turns on a few jobs, so a single seed says little about it.
// Run it with -benchtime 1x.
func BenchmarkEnforcementDays(b *testing.B) {
	for _, adm := range admissions {
		b.Run("admission="+adm.name, func(b *testing.B) { benchDays(b, adm.on, adm.placed) })
	}
}

func benchDays(b *testing.B, admission, placed bool) {
	const seeds = 10
	var p95Wins, effWins, idleWins int
	var largeNever [2]int
	var table string
	for b.Loop() {
		p95Wins, effWins, idleWins, table, largeNever = 0, 0, 0, "", [2]int{}
		for seed := uint64(1); seed <= seeds; seed++ {
			cfg := DefaultConfig()
			cfg.Sim.Start, cfg.Sim.Seed, cfg.Duration, cfg.Admission = start.Add(24*time.Hour), seed, 24*time.Hour, admission
			cfg.Placed = placed
			var reps [2]Report
			for i, enforce := range []bool{false, true} {
				cfg.Enforce = enforce
				var err error
				if reps[i], err = Run(b.Context(), cfg); err != nil {
					b.Fatal(err)
				}
			}
			off, on := reps[0], reps[1]
			p95Wins += btoi(on.WaitP95 < off.WaitP95)
			effWins += btoi(on.Effective > off.Effective)
			idleWins += btoi(on.IdleGPUh < off.IdleGPUh)
			table += fmt.Sprintf("seed %2d  effective %5.1f → %5.1f %%  idle %6.1f → %6.1f GPU-h  wait p95 %6.1f → %6.1f min (%d jobs)  large never started %d → %d of %d\n",
				seed, 100*off.Effective, 100*on.Effective, off.IdleGPUh, on.IdleGPUh, off.WaitP95.Minutes(), on.WaitP95.Minutes(), on.Jobs,
				off.LargeNeverStarted, on.LargeNeverStarted, on.LargeJobs)
			largeNever[0] += off.LargeNeverStarted
			largeNever[1] += on.LargeNeverStarted
		}
	}
	b.Log(strings.TrimSuffix(table, "\n")) // ten lines: a benchmark's log is cut after ten
	b.ReportMetric(float64(p95Wins), "p95_wins")
	b.ReportMetric(float64(effWins), "effective_wins")
	b.ReportMetric(float64(idleWins), "idle_wins")
	b.ReportMetric(seeds, "days")
	b.ReportMetric(float64(largeNever[0]), "large_never_started_off")
	b.ReportMetric(float64(largeNever[1]), "large_never_started_on")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BenchmarkDefragmentDays runs a larger fleet than the demo's (2 clusters × 12
// nodes × 8 GPUs: several nodes of each card type per cluster, so a moved job
// has somewhere to go) for one day, seeds 1 to 10, with the scheduler placing
// and enforcing, without and then with a policy that carries out the
// fragmentation finding's moves (checkpointable jobs of training-exp and
// inference-batch, after 15 minutes, at most 8 an hour), and counts the days on
// which the moves raise effective utilisation, and the large jobs never started
// either way. Run it with -benchtime 1x.
func BenchmarkDefragmentDays(b *testing.B) {
	const seeds = 10
	var effWins, effLosses, moves int
	var effGain float64
	var largeNever [2]int
	var table string
	for b.Loop() {
		effWins, effLosses, moves, effGain, largeNever, table = 0, 0, 0, 0, [2]int{}, ""
		for seed := uint64(1); seed <= seeds; seed++ {
			var reps [2]Report
			for i, defrag := range []bool{false, true} {
				cfg := DefaultConfig()
				cfg.Sim.Start, cfg.Sim.Seed, cfg.Duration, cfg.Admission, cfg.Placed = start.Add(24*time.Hour), seed, 24*time.Hour, true, true
				cfg.Sim.NodesPerCluster, cfg.Enforce, cfg.Policies = 12, true, DefaultPolicies()
				if defrag {
					cfg.Policies = append(cfg.Policies, DefragmentPolicy())
				}
				var err error
				if reps[i], err = Run(b.Context(), cfg); err != nil {
					b.Fatal(err)
				}
			}
			off, on := reps[0], reps[1]
			effWins += btoi(on.Effective > off.Effective+0.0005)
			effLosses += btoi(on.Effective < off.Effective-0.0005)
			effGain += 100 * (on.Effective - off.Effective) / seeds
			moves += on.Actions["reclaim ok"] - off.Actions["reclaim ok"]
			largeNever[0] += off.LargeNeverStarted
			largeNever[1] += on.LargeNeverStarted
			table += fmt.Sprintf("seed %2d  effective %5.1f → %5.1f %%  wait p95 %6.1f → %6.1f min  large never started %d → %d of %d\n",
				seed, 100*off.Effective, 100*on.Effective, off.WaitP95.Minutes(), on.WaitP95.Minutes(), off.LargeNeverStarted, on.LargeNeverStarted, on.LargeJobs)
		}
	}
	b.Log(strings.TrimSuffix(table, "\n"))
	b.ReportMetric(float64(effWins), "effective_wins")
	b.ReportMetric(float64(effLosses), "effective_losses")
	b.ReportMetric(effGain, "effective_gain_pp")
	b.ReportMetric(float64(moves), "reclaims_added")
	b.ReportMetric(float64(largeNever[0]), "large_never_started_off")
	b.ReportMetric(float64(largeNever[1]), "large_never_started_on")
}
