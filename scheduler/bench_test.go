package scheduler

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// benchModel is a large pool: 1,000 queues (5 pools, 100 cohorts of 10) over 8
// clusters of 4 card types, 256 GPUs of each per cluster (8,192 GPUs).
func benchModel(queues int) Model {
	cards := []Card{{Name: "L40S-48GB", MemoryGiB: 48, Rank: 1}, {Name: "A100-40GB", MemoryGiB: 40, Rank: 2},
		{Name: "A100-80GB", MemoryGiB: 80, Rank: 3}, {Name: "H100-80GB", MemoryGiB: 80, Rank: 4}}
	m := Model{Cards: cards, PriorityClasses: []PriorityClass{{Name: "high", Value: 100}, {Name: "normal", Value: 50}, {Name: "low", Value: 0}},
		DefaultPriorityClass: "normal"}
	total := map[string]int{}
	for c := range 8 {
		cl := Cluster{Name: fmt.Sprintf("c%d", c), Capacity: map[string]int{}}
		for _, card := range cards {
			cl.Capacity[card.Name] = 256
			total[card.Name] += 256
		}
		m.Clusters = append(m.Clusters, cl)
	}
	pools := []string{PoolTrainingExp, PoolTrainingProd, PoolInferenceOnline, PoolInferenceBatch, PoolDev}
	for _, p := range pools {
		pl := Pool{Name: p, Capacity: map[string]int{}, MayLend: true, MayBorrow: true, Preemptible: p != PoolInferenceOnline,
			ReclaimGrace: 5 * time.Minute}
		for _, card := range cards {
			pl.Capacity[card.Name] = total[card.Name] / len(pools)
		}
		m.Pools = append(m.Pools, pl)
	}
	perPool := queues / len(pools)
	for i := range queues {
		q := Queue{Name: fmt.Sprintf("q%04d", i), Pool: pools[i%len(pools)], Cohort: fmt.Sprintf("cohort%03d", i/10), Weight: float64(1 + i%3),
			Quota: map[string]Quota{}}
		for _, card := range cards {
			q.Quota[card.Name] = Quota{Nominal: total[card.Name] / len(pools) / perPool, BorrowingLimit: ptr(16)}
		}
		m.Queues = append(m.Queues, q)
	}
	return m
}

// benchEngine returns an engine with jobs queued over the model's queues.
func benchEngine(b *testing.B, m Model, jobs int, seed uint64) *Engine {
	e, err := NewEngine(m)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for range jobs {
		spec := JobSpec{Team: "t", Queue: m.Queues[r.IntN(len(m.Queues))].Name, GPUs: []int{1, 1, 2, 4, 8}[r.IntN(5)],
			PriorityClass: []string{"high", "normal", "normal", "low"}[r.IntN(4)], Checkpointable: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			spec.Card = m.Cards[r.IntN(len(m.Cards))].Name
		} else {
			spec.MinMemoryGiB = []int{16, 40, 48, 80}[r.IntN(4)]
		}
		if _, err := e.Submit(spec, t0); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// BenchmarkAdmission measures admission decisions per second with 10,000 queued
// jobs over 1,000 queues: "cold" is the first pass over a fresh pool (about 60 %
// of the jobs get GPUs), "steady" a pass over the ~4,000 that still wait on a
// full pool (each considered again, with victim searches). A decision is one
// queued job admitted or left waiting.
func BenchmarkAdmission(b *testing.B) {
	m := benchModel(1000)
	b.Run("cold", func(b *testing.B) {
		decisions := 0
		var elapsed time.Duration
		for b.Loop() {
			b.StopTimer()
			e := benchEngine(b, m, 10000, 7)
			b.StartTimer()
			start := time.Now()
			e.Schedule(t0)
			elapsed += time.Since(start)
			decisions += 10000
		}
		b.ReportMetric(float64(decisions)/elapsed.Seconds(), "decisions/s")
	})
	b.Run("steady", func(b *testing.B) {
		e := benchEngine(b, m, 10000, 7)
		for _, d := range e.Schedule(t0) {
			switch d.Kind {
			case DecisionReclaim, DecisionPreempt, DecisionExpire:
				_ = e.Confirm(d.Job.ID) // the stop the service would order, done
			}
		}
		now := t0.Add(time.Minute)
		e.Schedule(now)
		waiting := len(e.Jobs(JobFilter{State: StateQueued}))
		b.ResetTimer()
		for b.Loop() {
			e.Schedule(now)
		}
		b.ReportMetric(float64(waiting*b.N)/b.Elapsed().Seconds(), "decisions/s")
		b.ReportMetric(float64(waiting), "queued")
	})
}

// BenchmarkSubmitQueueLength measures a submit through the service, with the
// job state file on, once 1,000 and once 10,000 jobs are queued: a submit
// appends one job's line to the journal, so the two cost the same. Most of a
// submit is its fsync, whose time on a shared disk drifts from second to
// second; so the 10k run also submits to a service holding 1,000 jobs, in
// turn with its own submits, and reports its time over that one's
// (ratio_10k/1k). Before the journal, each submit rewrote the whole state
// file: ~22 ms at 1k on this machine, ten times that at 10k.
func BenchmarkSubmitQueueLength(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Model = benchModel(1000)
	spec := func(i int) JobSpec {
		return JobSpec{Team: "t", Queue: cfg.Model.Queues[i%len(cfg.Model.Queues)].Name, GPUs: 1 + i%4,
			Name: "bench job", Labels: map[string]string{"gpupool.io/bench": "yes"}}
	}
	// filled returns a service with n jobs queued, and a submit that times one
	// more.
	filled := func(b *testing.B, n int) func() time.Duration {
		svc, err := New(cfg, WithStateFile(filepath.Join(b.TempDir(), "jobs.json")), WithJobIDPrefix(""))
		if err != nil {
			b.Fatal(err)
		}
		if err := svc.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if _, err := svc.Submit(b.Context(), spec(i)); err != nil {
				b.Fatal(err)
			}
		}
		i := n
		return func() time.Duration {
			start := time.Now()
			if _, err := svc.Submit(b.Context(), spec(i)); err != nil {
				b.Fatal(err)
			}
			i++
			return time.Since(start)
		}
	}
	b.Run("1k", func(b *testing.B) {
		submit := filled(b, 1000)
		var took time.Duration
		for b.Loop() {
			took += submit()
		}
		b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/submit")
	})
	b.Run("10k", func(b *testing.B) {
		submit, baseline := filled(b, 10000), filled(b, 1000)
		var took, base time.Duration
		for b.Loop() {
			took += submit()
			base += baseline()
		}
		b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/submit")
		b.ReportMetric(float64(took)/float64(base), "ratio_10k/1k")
	})
}
