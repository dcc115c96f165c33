package sim

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

var (
	benchNodes = flag.Int("bench.nodes", 1000, "BenchmarkAdmission: nodes of 8 GPUs (in 4 clusters)")
	benchJobs  = flag.Int("bench.jobs", 10000, "BenchmarkAdmission: queued jobs")
)

// BenchmarkAdmission is one admission pass over bench.jobs queued jobs (the
// simulator's sizes: 1–64 GPUs, gangs 8 per node) on an empty fleet of
// bench.nodes nodes × 8 GPUs: about a seventh start, the rest wait. counting is
// today's rule (the cluster's free count, best-fit cluster), the baseline; the
// others place every job on nodes and GPUs. decisions/s is jobs decided per
// second; the parent logs each one's ratio to counting.
func BenchmarkAdmission(b *testing.B) {
	c := Config{Clusters: 4, NodesPerCluster: max(1, *benchNodes/4), GPUsPerNode: 8, RackNodes: 8, Load: 1, Seed: 1, Horizon: 24 * time.Hour}
	all := Workload(c)
	for len(all) < *benchJobs {
		c.Horizon *= 2
		all = Workload(c)
	}
	jobs := all[:*benchJobs]
	st, err := placement.NewState(c.Fleet())
	if err != nil {
		b.Fatal(err)
	}
	pend := make([]placement.Pending, len(jobs))
	for i, j := range jobs {
		comp, err := st.Compile(j.Request)
		if err != nil {
			b.Fatal(err)
		}
		pend[i] = placement.Pending{ID: j.ID, Req: comp, TimeLimit: j.TimeLimit}
	}
	rate := map[string]float64{}
	b.Run("counting", func(b *testing.B) {
		free := make([]int, c.Clusters)
		admitted := 0
		for b.Loop() {
			for i := range free {
				free[i] = c.NodesPerCluster * c.GPUsPerNode
			}
			admitted = 0
			for _, j := range jobs {
				best := -1
				for k, f := range free {
					if f >= j.Request.GPUs && (best < 0 || f < free[best]) {
						best = k
					}
				}
				if best >= 0 {
					free[best] -= j.Request.GPUs
					admitted++
				}
			}
		}
		rate["counting"] = report(b, len(jobs))
		b.ReportMetric(float64(admitted), "started")
	})
	for _, p := range []placement.Policy{placement.BestEffortFIFO, placement.Backfill} {
		b.Run(string(p), func(b *testing.B) {
			now := Epoch
			started := 0
			for b.Loop() {
				started = 0
				for _, d := range st.Plan(now, pend, placement.PlanConfig{Policy: p}, nil) {
					if d.Start {
						started++
					}
				}
				b.StopTimer()
				for _, id := range st.Jobs() {
					_ = st.Release(id)
				}
				b.StartTimer()
			}
			rate[string(p)] = report(b, len(jobs))
			b.ReportMetric(float64(started), "started")
		})
	}
	for _, p := range []placement.Policy{placement.BestEffortFIFO, placement.Backfill} {
		if rate["counting"] > 0 && rate[string(p)] > 0 {
			b.Log(fmt.Sprintf("%s: %.0f decisions/s, %.3f of counting's %.0f", p, rate[string(p)], rate[string(p)]/rate["counting"], rate["counting"]))
		}
	}
}

func report(b *testing.B, decisions int) float64 {
	r := float64(decisions) * float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(r, "decisions/s")
	return r
}
