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
// others place every job on nodes and GPUs (conservative backfill also with
// PlanConfig.Replan 8). decisions/s is jobs decided per
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
	configs := []struct {
		name string
		cfg  placement.PlanConfig
	}{
		{string(placement.BestEffortFIFO), placement.PlanConfig{Policy: placement.BestEffortFIFO}},
		{string(placement.Backfill), placement.PlanConfig{Policy: placement.Backfill}},
		{string(placement.ConservativeBackfill), placement.PlanConfig{Policy: placement.ConservativeBackfill}},
		{"conservative-backfill-replan-8", placement.PlanConfig{Policy: placement.ConservativeBackfill, Replan: 8}},
	}
	for _, bc := range configs {
		b.Run(bc.name, func(b *testing.B) {
			now := Epoch
			started := 0
			for b.Loop() {
				started = 0
				for _, d := range st.Plan(now, pend, bc.cfg, nil) {
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
			rate[bc.name] = report(b, len(jobs))
			b.ReportMetric(float64(started), "started")
		})
	}
	for _, bc := range configs {
		if p := bc.name; rate["counting"] > 0 && rate[p] > 0 {
			b.Log(fmt.Sprintf("%s: %.0f decisions/s, %.3f of counting's %.0f", p, rate[p], rate[p]/rate["counting"], rate["counting"]))
		}
	}
}

func report(b *testing.B, decisions int) float64 {
	r := float64(decisions) * float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(r, "decisions/s")
	return r
}
