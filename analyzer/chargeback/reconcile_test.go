package chargeback

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// The reconciliation fleet: three hours, [00:00, 03:00) of 2026-03-02, one cluster,
// four card types, every way a GPU is held, so that summing the jobs' used, idle
// and unmeasured (of which unobserved) GPU-hours and the unallocated ones gives
// exactly the fleet's GPU-hours, and their costs exactly GPU-hours × price per card
// type. A share counted twice or lost breaks the sums.
//
//	GPU-w   H100-80GB whole     w1 00:00–02:30: busy to 01:00, idle to 01:30, then
//	                            no telemetry (collector down) to 02:00, busy to 02:30;
//	                            unallocated 02:30–03:00
//	MIG-a3  A100-40GB 3g.20gb   m1 00:00–03:00 busy
//	MIG-a4  A100-40GB 4g.20gb   m2 00:30–02:00 idle; unallocated otherwise
//	GPU-t   L40S-48GB shared    t1 00:00–03:00 busy (SM 60 %, 30000 MiB);
//	                            t2 00:00–03:00 an idle tenant (SM 0, 20000 MiB);
//	                            the GPU is busy (its samples are t1's)
//	GPU-o   L4-24GB shared      o1 and o2 00:00–02:00, no per-process figures (the
//	                            source cannot split the GPU), 8000 and 8000 MiB;
//	                            GPU busy to 01:00, idle after; unallocated 02:00–03:00
var (
	recFrom = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	recTo   = recFrom.Add(3 * time.Hour)
)

func rat(h, m int) time.Time {
	return recFrom.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

// recPrices: one price per card type.
var recPrices = map[string]float64{"H100-80GB": 4, "A100-40GB": 2, "L40S-48GB": 1, "L4-24GB": 0.5}

// recCapacity is each card type's GPU-hours over the period: every GPU of it was
// there (reporting or held) for the three hours; the two MIG slices are 3/7 and
// 4/7 of one A100.
var recCapacity = map[string]float64{"H100-80GB": 3, "A100-40GB": 3, "L40S-48GB": 3, "L4-24GB": 3}

type recGPU struct {
	uuid, node, card, mig string
	// state returns whether the GPU reported at t, its engine activity and its
	// processes.
	state func(t time.Time) (ok bool, gr float32, procs []schemas.ProcessSample)
}

func recProc(job string, pid uint32, mib uint32, sm float32) schemas.ProcessSample {
	return schemas.ProcessSample{PID: pid, ProcessName: "python", Job: job, FBUsedMiB: mib, SMUtil: sm, MemUtil: 0}
}

var recGPUs = []recGPU{
	{"GPU-w", "n1", "H100-80GB", "", func(t time.Time) (bool, float32, []schemas.ProcessSample) {
		w := []schemas.ProcessSample{proc("w1", 10, 40000)}
		switch {
		case t.Before(rat(1, 0)):
			return true, 0.9, w
		case t.Before(rat(1, 30)):
			return true, 0, w
		case t.Before(rat(2, 0)):
			return false, 0, nil
		case t.Before(rat(2, 30)):
			return true, 0.9, w
		}
		return true, 0, nil
	}},
	{"MIG-a3", "n2", "A100-40GB", "3g.20gb", func(t time.Time) (bool, float32, []schemas.ProcessSample) {
		return true, 0.7, []schemas.ProcessSample{proc("m1", 20, 15000)}
	}},
	{"MIG-a4", "n2", "A100-40GB", "4g.20gb", func(t time.Time) (bool, float32, []schemas.ProcessSample) {
		if between(t, rat(0, 30), rat(2, 0)) {
			return true, 0, []schemas.ProcessSample{proc("m2", 21, 12000)}
		}
		return true, 0, nil
	}},
	{"GPU-t", "n3", "L40S-48GB", "", func(t time.Time) (bool, float32, []schemas.ProcessSample) {
		return true, 0.8, []schemas.ProcessSample{recProc("t1", 30, 30000, 0.6), recProc("t2", 31, 20000, 0)}
	}},
	{"GPU-o", "n4", "L4-24GB", "", func(t time.Time) (bool, float32, []schemas.ProcessSample) {
		if t.Before(rat(2, 0)) {
			gr := float32(0)
			if t.Before(rat(1, 0)) {
				gr = 0.5
			}
			return true, gr, []schemas.ProcessSample{proc("o1", 40, 8000), proc("o2", 41, 8000)}
		}
		return true, 0, nil
	}},
}

func recJobEvents() []schemas.JobEvent {
	var out []schemas.JobEvent
	job := func(name, card, node, uuid string, from, to time.Time) {
		out = append(out,
			schemas.JobEvent{TimeMs: from.UnixMilli(), Job: name, Event: schemas.EventSubmit, Source: schemas.SourceKubernetes,
				Cluster: "c1", Team: "team-" + name, Project: "p", Pool: "pool", GPUs: 1, Card: card, Attempt: 1},
			schemas.JobEvent{TimeMs: from.UnixMilli(), Job: name, Event: schemas.EventStart, Source: schemas.SourceKubernetes,
				Cluster: "c1", Nodes: []string{node}, GPUUUIDs: []string{uuid}, Attempt: 1},
			schemas.JobEvent{TimeMs: to.UnixMilli(), Job: name, Event: schemas.EventEnd, Source: schemas.SourceKubernetes,
				Cluster: "c1", Status: schemas.StatusSucceeded, Attempt: 1})
	}
	job("w1", "H100-80GB", "n1", "GPU-w", rat(0, 0), rat(2, 30))
	job("m1", "A100-40GB", "n2", "MIG-a3", rat(0, 0), rat(3, 0))
	job("m2", "A100-40GB", "n2", "MIG-a4", rat(0, 30), rat(2, 0))
	job("t1", "L40S-48GB", "n3", "GPU-t", rat(0, 0), rat(3, 0))
	job("t2", "L40S-48GB", "n3", "GPU-t", rat(0, 0), rat(3, 0))
	job("o1", "L4-24GB", "n4", "GPU-o", rat(0, 0), rat(2, 0))
	job("o2", "L4-24GB", "n4", "GPU-o", rat(0, 0), rat(2, 0))
	return out
}

// loadRecFleet loads the reconciliation fleet, sampled every minute from an hour
// before the period (so the first hour's energy has a previous reading).
func loadRecFleet(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	l := ingest.NewLoader(s, 100000)
	for tm := rat(-1, 0); tm.Before(recTo); tm = tm.Add(time.Minute) {
		for i, g := range recGPUs {
			ok, gr, procs := g.state(tm)
			if !ok {
				continue
			}
			if tm.Before(recFrom) {
				gr, procs = 0, nil
			}
			b := &schemas.SampleBatch{Cluster: "c1", Node: g.node}
			gs := schemas.NewGPUSample()
			gs.TimeMs, gs.Cluster, gs.Node, gs.GPUUUID, gs.GPUIndex = tm.UnixMilli(), "c1", g.node, g.uuid, uint32(i)
			gs.Model, gs.Card, gs.MIGProfile, gs.FBTotalMiB = "test card", g.card, g.mig, 81920
			gs.GrEngineActive, gs.SMActive, gs.DRAMActive, gs.PowerW = gr, gr*0.8, 0, 100
			gs.PCIeRxBytesPerS, gs.PCIeTxBytesPerS = 1000, 1000
			for k := range procs {
				procs[k].TimeMs, procs[k].Cluster, procs[k].Node, procs[k].GPUUUID = tm.UnixMilli(), "c1", g.node, g.uuid
				gs.FBUsedMiB += procs[k].FBUsedMiB
			}
			b.GPUs, b.Processes = []schemas.GPUSample{gs}, procs
			if err := l.AddSamples(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.AddJobs(ctx, recJobEvents()); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	q := "INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note) VALUES "
	first := true
	for card, p := range recPrices {
		if !first {
			q += ", "
		}
		first = false
		q += fmt.Sprintf("('%s', '2026-01-01 00:00:00', NULL, %g, 'USD', 'list')", card, p)
	}
	if err := s.Exec(ctx, q, nil); err != nil {
		t.Fatal(err)
	}
}

// recTotals are one card type's sums over the jobs' rows and the unallocated ones.
type recTotals struct {
	gpuHours, used, idle, unmeasured, unobserved, unallocated, cost float64
}

func reconcile(t *testing.T, s store.Store) (map[string]recTotals, map[string]Row) {
	t.Helper()
	ctx := context.Background()
	rows, err := Compute(ctx, s, recFrom, recTo)
	if err != nil {
		t.Fatal(err)
	}
	un, err := ComputeUnallocated(ctx, s, recFrom, recTo)
	if err != nil {
		t.Fatal(err)
	}
	tot, byJob := map[string]recTotals{}, map[string]Row{}
	for _, r := range rows {
		byJob[r.Job] = r
		if !near(r.GPUHours, r.UsedGPUHours+r.IdleGPUHours+r.UnmeasuredGPUHours) || r.UnobservedGPUHours > r.UnmeasuredGPUHours+1e-9 {
			t.Errorf("%s: gpu %g != used %g + idle %g + unmeasured %g (unobserved %g)", r.Job, r.GPUHours, r.UsedGPUHours,
				r.IdleGPUHours, r.UnmeasuredGPUHours, r.UnobservedGPUHours)
		}
		if r.Cost == nil {
			t.Fatalf("%s: no cost", r.Job)
		}
		x := tot[r.Card]
		x.gpuHours += r.GPUHours
		x.used += r.UsedGPUHours
		x.idle += r.IdleGPUHours
		x.unmeasured += r.UnmeasuredGPUHours
		x.unobserved += r.UnobservedGPUHours
		x.cost += *r.Cost
		tot[r.Card] = x
	}
	for _, u := range un {
		if u.Cost == nil {
			t.Fatalf("unallocated %s: no cost", u.Card)
		}
		x := tot[u.Card]
		x.unallocated += u.UnallocatedGPUHours
		x.cost += *u.Cost
		tot[u.Card] = x
		if !near(u.CapacityGPUHours, recCapacity[u.Card]) {
			t.Errorf("%s: capacity %g GPU-hours, want %g", u.Card, u.CapacityGPUHours, recCapacity[u.Card])
		}
	}
	for card, want := range recCapacity {
		x := tot[card]
		if got := x.used + x.idle + x.unmeasured + x.unallocated; !near(got, want) {
			t.Errorf("%s: used %g + idle %g + unmeasured %g (unobserved %g) + unallocated %g = %g GPU-hours, want %g",
				card, x.used, x.idle, x.unmeasured, x.unobserved, x.unallocated, got, want)
		}
		if want := want * recPrices[card]; math.Abs(x.cost-want) > 1e-9 {
			t.Errorf("%s: jobs' and unallocated cost %g, want GPU-hours × price = %g", card, x.cost, want)
		}
	}
	return tot, byJob
}

// TestReconcileSharedMIGWhole: on whole GPUs (with a telemetry gap), MIG slices and
// time-sliced GPUs (tenants with and without per-process figures), the jobs' used +
// idle + unmeasured (of which unobserved) + unallocated GPU-hours are the fleet's
// GPU-hours per card type and their cost is GPU-hours × price, live, from the
// refreshed hours and in the finance views; under the memory split (default) the
// idle tenant's share lands in idle; under the activity split it pays nothing and
// the totals still reconcile.
func TestReconcileSharedMIGWhole(t *testing.T) {
	ctx := context.Background()
	s := openMigrated(t)
	loadRecFleet(t, s)

	want := map[string]struct{ gpu, used, idle, unobs float64 }{
		"w1": {2.5, 1.5, 0.5, 0.5},
		"m1": {3 * 3. / 7, 3 * 3. / 7, 0, 0},
		"m2": {1.5 * 4. / 7, 0, 1.5 * 4. / 7, 0},
		// memory split 3:2; t1 judged busy by its own processes, t2 idle by its own
		"t1": {1.8, 1.8, 0, 0},
		"t2": {1.2, 0, 1.2, 0},
		// no per-process figures: the GPU's activity (busy the first hour) for both
		"o1": {1, 0.5, 0.5, 0},
		"o2": {1, 0.5, 0.5, 0},
	}
	check := func(when string) {
		t.Helper()
		_, byJob := reconcile(t, s)
		for job, w := range want {
			r, ok := byJob[job]
			if !ok {
				t.Errorf("%s: no row for %s", when, job)
				continue
			}
			if !near(r.GPUHours, w.gpu) || !near(r.UsedGPUHours, w.used) || !near(r.IdleGPUHours, w.idle) || !near(r.UnobservedGPUHours, w.unobs) {
				t.Errorf("%s: %s: gpu %g used %g idle %g unobserved %g; want %g %g %g %g", when, job,
					r.GPUHours, r.UsedGPUHours, r.IdleGPUHours, r.UnobservedGPUHours, w.gpu, w.used, w.idle, w.unobs)
			}
		}
	}
	check("live")
	if err := RefreshRange(ctx, s, recFrom, recTo); err != nil {
		t.Fatal(err)
	}
	check("refreshed")

	// The finance views: chargeback_daily and unallocated_capacity add up to the
	// capacity and its cost.
	res, err := s.Query(ctx, `SELECT card, sum(g) AS g, sum(c) AS c FROM (
    SELECT card, sum(gpu_hours) AS g, sum(cost) AS c FROM chargeback_daily GROUP BY card
    UNION ALL
    SELECT card, sum(unallocated_gpu_hours) AS g, sum(unallocated_cost) AS c FROM unallocated_capacity GROUP BY card
) GROUP BY card ORDER BY card`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Rows {
		card, _ := res.String(i, "card")
		g, _ := res.Float(i, "g")
		c, _ := res.Float(i, "c")
		if !near(g, recCapacity[card]) || !near(c, recCapacity[card]*recPrices[card]) {
			t.Errorf("views: %s: %g GPU-hours costing %g, want %g and %g", card, g, c, recCapacity[card], recCapacity[card]*recPrices[card])
		}
	}
	if len(res.Rows) != len(recCapacity) {
		t.Errorf("views: %d card types, want %d", len(res.Rows), len(recCapacity))
	}

	// The activity split from the period's start: t2 (never active) pays nothing,
	// t1 the whole GPU; o1 and o2 have no per-process figures, so memory still.
	if err := s.Exec(ctx, `INSERT INTO chargeback_settings (effective_from, shared_split, note)
VALUES ('2026-03-01 00:00:00', 'activity', 'test')`, nil); err != nil {
		t.Fatal(err)
	}
	if err := RefreshRange(ctx, s, recFrom, recTo); err != nil {
		t.Fatal(err)
	}
	want["t1"] = struct{ gpu, used, idle, unobs float64 }{3, 3, 0, 0}
	delete(want, "t2") // a zero share leaves no row, checked below
	check("activity split")
	if _, byJob := reconcile(t, s); byJob["t2"].GPUHours > 1e-9 {
		t.Errorf("activity split: t2 pays %g GPU-hours, want 0", byJob["t2"].GPUHours)
	}

	// A setting that is neither memory nor activity fails, naming the table.
	if err := s.Exec(ctx, `INSERT INTO chargeback_settings (effective_from, shared_split) VALUES ('2026-03-02 00:00:00', 'equal')`, nil); err != nil {
		t.Fatal(err)
	}
	if err := RefreshRange(ctx, s, recFrom, recTo); err == nil || !strings.Contains(err.Error(), "chargeback_settings") {
		t.Errorf("refresh with shared_split 'equal': err %v, want one naming chargeback_settings", err)
	}
}
