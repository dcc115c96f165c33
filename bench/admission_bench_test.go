package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// admissionNodes and admissionJobs size BenchmarkAdmissionPlacement as issue 36
// asks: 10,000 queued jobs over 1,000 nodes × 8 GPUs.
const (
	admissionClusters     = 8
	admissionNodesPerCard = 125 / 4 // per cluster and card; the H100s get the remainder
	admissionJobs         = 10000
	admissionQueues       = 1000
)

var admissionT0 = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)

// admissionModel is 1,000 nodes × 8 GPUs (8 clusters of 125 nodes: 31 L40S,
// 31 A100-40GB, 31 A100-80GB and 32 H100 nodes, each card's nodes one rack),
// 5 pools and 1,000 queues in cohorts of 10. placed lists the nodes (the engine
// places jobs on them, EASY backfill); otherwise the clusters give the same
// GPUs as counts (today's counting engine).
func admissionModel(placed bool) scheduler.Model {
	cards := []scheduler.Card{{Name: "L40S-48GB", MemoryGiB: 48, Rank: 1}, {Name: "A100-40GB", MemoryGiB: 40, Rank: 2},
		{Name: "A100-80GB", MemoryGiB: 80, Rank: 3}, {Name: "H100-80GB", MemoryGiB: 80, Rank: 4}}
	m := scheduler.Model{Cards: cards, PriorityClasses: []scheduler.PriorityClass{{Name: "high", Value: 100},
		{Name: "normal", Value: 50}, {Name: "low", Value: 0}}, DefaultPriorityClass: "normal"}
	if placed {
		m.TopologyLevels = []string{"rack"}
	}
	total := map[string]int{}
	for c := range admissionClusters {
		cl := scheduler.Cluster{Name: fmt.Sprintf("c%d", c)}
		if !placed {
			cl.Capacity = map[string]int{}
		}
		for i, card := range cards {
			nodes := admissionNodesPerCard
			if i == len(cards)-1 {
				nodes = 125 - 3*admissionNodesPerCard
			}
			total[card.Name] += 8 * nodes
			if placed {
				cl.Nodes = append(cl.Nodes, scheduler.NodeGroup{Name: fmt.Sprintf("c%d-%s-", c, card.Name), Count: nodes,
					Card: card.Name, GPUs: 8, Topology: map[string]string{"rack": fmt.Sprintf("c%d-r%d", c, i)}})
			} else {
				cl.Capacity[card.Name] = 8 * nodes
			}
		}
		m.Clusters = append(m.Clusters, cl)
	}
	pools := []string{scheduler.PoolTrainingExp, scheduler.PoolTrainingProd, scheduler.PoolInferenceOnline,
		scheduler.PoolInferenceBatch, scheduler.PoolDev}
	for _, p := range pools {
		pl := scheduler.Pool{Name: p, Capacity: map[string]int{}, MayLend: true, MayBorrow: true,
			Preemptible: p != scheduler.PoolInferenceOnline, ReclaimGrace: 5 * time.Minute}
		for _, card := range cards {
			pl.Capacity[card.Name] = total[card.Name] / len(pools)
		}
		m.Pools = append(m.Pools, pl)
	}
	perPool := admissionQueues / len(pools)
	for i := range admissionQueues {
		q := scheduler.Queue{Name: fmt.Sprintf("q%04d", i), Pool: pools[i%len(pools)], Cohort: fmt.Sprintf("cohort%03d", i/10),
			Weight: float64(1 + i%3), Quota: map[string]scheduler.Quota{}}
		limit := 16
		for _, card := range cards {
			q.Quota[card.Name] = scheduler.Quota{Nominal: total[card.Name] / len(pools) / perPool, BorrowingLimit: &limit}
		}
		m.Queues = append(m.Queues, q)
	}
	return m
}

// admissionEngine is an engine over m with admissionJobs queued: 1–8 GPUs
// (8: one whole node), a card or a memory floor, time limits of 1–24 h. The
// same seed gives both engines the same jobs.
func admissionEngine(b *testing.B, m scheduler.Model, seed uint64) *scheduler.Engine {
	e, err := scheduler.NewEngine(m)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for range admissionJobs {
		spec := scheduler.JobSpec{Team: "t", Queue: m.Queues[r.IntN(len(m.Queues))].Name, GPUs: []int{1, 1, 2, 4, 8}[r.IntN(5)],
			PriorityClass: []string{"high", "normal", "normal", "low"}[r.IntN(4)], Checkpointable: r.IntN(2) == 0,
			TimeLimitS: int64(3600 * (1 + r.IntN(24)))}
		if spec.GPUs == 8 {
			spec.GPUsPerNode = 8
		}
		if r.IntN(2) == 0 {
			spec.Card = m.Cards[r.IntN(len(m.Cards))].Name
		} else {
			spec.MinMemoryGiB = []int{16, 40, 48, 80}[r.IntN(4)]
		}
		if _, err := e.Submit(spec, admissionT0); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// queued counts the engine's queued jobs.
func queued(e *scheduler.Engine) int {
	return len(e.Jobs(scheduler.JobFilter{State: scheduler.StateQueued}))
}

// confirm acknowledges the pass's stops, as an executor would.
func confirm(e *scheduler.Engine, ds []scheduler.Decision) {
	for _, d := range ds {
		switch d.Kind {
		case scheduler.DecisionReclaim, scheduler.DecisionPreempt, scheduler.DecisionExpire:
			_ = e.Confirm(d.Job.ID)
		}
	}
}

// BenchmarkAdmissionPlacement is issue 36's admission throughput: decisions per
// second of scheduler.Engine over 10,000 queued jobs on 1,000 nodes × 8 GPUs,
// with placement (the model lists the nodes: every admission names nodes and
// GPUs, EASY backfill) as a ratio to today's GPU-counting engine (the same
// GPUs as counts), both on the same jobs in the same run, interleaved. "cold"
// is the first pass over the fresh fleet; "steady" a pass over the jobs still
// waiting on the full fleet. A decision is one queued job admitted or left
// waiting. Goal: ratio ≥ 0.25.
func BenchmarkAdmissionPlacement(b *testing.B) {
	counting, placed := admissionModel(false), admissionModel(true)
	type side struct {
		cold, steady         time.Duration
		coldDec, steadyDec   int
		admitted, lastQueued int
	}
	var sides [2]side
	seed := uint64(0)
	for b.Loop() {
		b.StopTimer()
		seed++
		for i, m := range []scheduler.Model{counting, placed} {
			s := &sides[i]
			e := admissionEngine(b, m, seed)
			start := time.Now()
			ds := e.Schedule(admissionT0)
			s.cold += time.Since(start)
			s.coldDec += admissionJobs
			confirm(e, ds)
			now := admissionT0.Add(time.Minute)
			confirm(e, e.Schedule(now))
			n := queued(e)
			s.admitted, s.lastQueued = admissionJobs-n, n
			start = time.Now()
			e.Schedule(now)
			s.steady += time.Since(start)
			s.steadyDec += n
		}
		b.StartTimer()
	}
	rate := func(d int, t time.Duration) float64 { return float64(d) / t.Seconds() }
	cc, pc := rate(sides[0].coldDec, sides[0].cold), rate(sides[1].coldDec, sides[1].cold)
	cs, ps := rate(sides[0].steadyDec, sides[0].steady), rate(sides[1].steadyDec, sides[1].steady)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(cc, "counting_cold_dec/s")
	b.ReportMetric(pc, "placed_cold_dec/s")
	b.ReportMetric(pc/cc, "ratio_cold")
	b.ReportMetric(cs, "counting_steady_dec/s")
	b.ReportMetric(ps, "placed_steady_dec/s")
	b.ReportMetric(ps/cs, "ratio_steady")
	fmt.Printf("admission, 10,000 queued jobs on 1,000 nodes × 8 GPUs: counting %.0f / %.0f decisions/s (cold / steady, %d admitted, %d left), "+
		"placement %.0f / %.0f (%d admitted, %d left); ratio %.2f / %.2f (goal ≥ 0.25)\n",
		cc, cs, sides[0].admitted, sides[0].lastQueued, pc, ps, sides[1].admitted, sides[1].lastQueued, pc/cc, ps/cs)
}
