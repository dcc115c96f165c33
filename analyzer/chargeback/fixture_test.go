package chargeback

import (
	"context"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// The tiny fleet: three GPUs sampled every minute from 23:00 the day before (so the
// first hour's energy has a previous reading) to 04:00, and five job attempts,
// built so that every chargeback figure of [00:00, 04:00) is a round number worked
// out by hand in TestTinyFleet.
//
//	GPU-a  H100-80GB            train-1 00:30–01:30 (failed, rerun by train-2), active, 700 W
//	                            train-2 02:00–(running): active until 03:00, then idle; 700 W / 100 W
//	                            free otherwise: idle, 100 W
//	MIG-b  A100-40GB, 3g.20gb   nb-1 00:00–05:00, active, 150 W
//	GPU-c  L40S-48GB (no price) s1 01:00–03:00 (30000 MiB), s2 02:00–03:00 (10000 MiB):
//	                            shared 3:1 from 02:00; active 300 W while held, idle 60 W otherwise
//
// Prices: H100-80GB 4.00 USD from 2026-01-01, 6.00 USD from 2026-03-01 03:00;
// A100-40GB 2.10 USD from 2026-01-01; L40S-48GB none. Energy in c1: 0.20 USD per
// kWh; a waiting GPU-hour in the dev pool: 1.00 USD (other pools: the card's price).
var (
	tinyFrom = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tinyTo   = tinyFrom.Add(4 * time.Hour)
)

func at(h, m int) time.Time {
	return tinyFrom.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

// tinyGPU says what one GPU does at one minute.
type tinyGPU struct {
	uuid, node, card, mig string
	// state returns activity (engine ratio), power (W) and the jobs' processes.
	state func(t time.Time) (gr float32, powerW float32, procs []schemas.ProcessSample)
}

func between(t, from, to time.Time) bool { return !t.Before(from) && t.Before(to) }

func proc(job string, pid uint32, mib uint32) schemas.ProcessSample {
	return schemas.ProcessSample{PID: pid, ProcessName: "python", Job: job, FBUsedMiB: mib, SMUtil: schemas.Missing, MemUtil: schemas.Missing}
}

var tinyGPUs = []tinyGPU{
	{"GPU-a", "node-1", "H100-80GB", "", func(t time.Time) (float32, float32, []schemas.ProcessSample) {
		switch {
		case between(t, at(0, 30), at(1, 30)):
			return 0.9, 700, []schemas.ProcessSample{proc("train-1", 100, 60000)}
		case between(t, at(2, 0), at(3, 0)):
			return 0.8, 700, []schemas.ProcessSample{proc("train-2", 200, 50000)}
		case !t.Before(at(3, 0)):
			return 0, 100, []schemas.ProcessSample{proc("train-2", 200, 50000)}
		}
		return 0, 100, nil
	}},
	{"MIG-b", "node-2", "A100-40GB", "3g.20gb", func(t time.Time) (float32, float32, []schemas.ProcessSample) {
		if !t.Before(at(0, 0)) {
			return 0.5, 150, []schemas.ProcessSample{proc("nb-1", 300, 15000)}
		}
		return 0, 20, nil
	}},
	{"GPU-c", "node-3", "L40S-48GB", "", func(t time.Time) (float32, float32, []schemas.ProcessSample) {
		switch {
		case between(t, at(1, 0), at(2, 0)):
			return 0.6, 300, []schemas.ProcessSample{proc("s1", 400, 30000)}
		case between(t, at(2, 0), at(3, 0)):
			return 0.6, 300, []schemas.ProcessSample{proc("s1", 400, 30000), proc("s2", 500, 10000)}
		}
		return 0, 60, nil
	}},
}

func tinyJobEvents() []schemas.JobEvent {
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	submit := func(t time.Time, job, team, project, model, pool, card string, attempt uint32, rerunOf string) schemas.JobEvent {
		return schemas.JobEvent{TimeMs: ms(t), Job: job, Event: schemas.EventSubmit, Source: schemas.SourceKubernetes,
			Cluster: "c1", Team: team, Project: project, Pool: pool, ModelName: model, GPUs: 1, Card: card,
			Attempt: attempt, RerunOf: rerunOf}
	}
	start := func(t time.Time, job, node, uuid string, attempt uint32) schemas.JobEvent {
		return schemas.JobEvent{TimeMs: ms(t), Job: job, Event: schemas.EventStart, Source: schemas.SourceKubernetes,
			Cluster: "c1", Nodes: []string{node}, GPUUUIDs: []string{uuid}, Attempt: attempt}
	}
	end := func(t time.Time, job, status string, attempt uint32) schemas.JobEvent {
		e := schemas.JobEvent{TimeMs: ms(t), Job: job, Event: schemas.EventEnd, Source: schemas.SourceKubernetes,
			Cluster: "c1", Status: status, Attempt: attempt}
		if status == schemas.StatusFailed {
			e.ExitCode = 1
		}
		return e
	}
	return []schemas.JobEvent{
		submit(at(-1, 50), "nb-1", "vision", "ocr", "resnet50", "dev", "A100-40GB", 1, ""),
		start(at(0, 0), "nb-1", "node-2", "MIG-b", 1),
		submit(at(0, 0), "train-1", "nlp", "chat", "llama-3-8b", "training-prod", "H100-80GB", 1, ""),
		start(at(0, 30), "train-1", "node-1", "GPU-a", 1),
		submit(at(1, 0), "s1", "recsys", "feed-ranking", "dlrm-v2", "inference-batch", "L40S-48GB", 1, ""),
		start(at(1, 0), "s1", "node-3", "GPU-c", 1),
		end(at(1, 30), "train-1", schemas.StatusFailed, 1),
		submit(at(1, 30), "s2", "recsys", "ads-ctr", "dcn-v2", "inference-batch", "L40S-48GB", 1, ""),
		submit(at(1, 40), "train-2", "nlp", "chat", "llama-3-8b", "training-prod", "H100-80GB", 2, "train-1"),
		start(at(2, 0), "train-2", "node-1", "GPU-a", 2),
		start(at(2, 0), "s2", "node-3", "GPU-c", 1),
		end(at(3, 0), "s1", schemas.StatusSucceeded, 1),
		end(at(3, 0), "s2", schemas.StatusSucceeded, 1),
		end(at(5, 0), "nb-1", schemas.StatusSucceeded, 1),
	}
}

// tinyPrices are the price book rows of the tiny fleet.
const tinyPrices = `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note) VALUES
    ('H100-80GB', '2026-01-01 00:00:00', NULL, 4.00, 'USD', 'list'),
    ('H100-80GB', '2026-03-01 03:00:00', NULL, 6.00, 'USD', 'new contract'),
    ('A100-40GB', '2026-01-01 00:00:00', NULL, 2.10, 'USD', 'list'),
    ('energy:c1', '2026-01-01 00:00:00', NULL, 0.20, 'USD', 'site tariff per kWh'),
    ('queue-wait:dev', '2026-01-01 00:00:00', NULL, 1.00, 'USD', 'opportunity cost of a waiting GPU-hour')`

// openMigrated returns a fresh store with every migration and view applied.
func openMigrated(t testing.TB) *chdb.Store {
	t.Helper()
	s := chdbtest.Open(t)
	ms, err := schemas.Migrations(schemas.MigrationParams{DB: s.Database(), RawTTLDays: 3650})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := schemas.Views(schemas.MigrationParams{DB: s.Database(), RawTTLDays: 3650})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for _, q := range m.Statements {
			if err := s.Exec(context.Background(), q, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, v := range vs {
		if err := s.Exec(context.Background(), v.Statement, nil); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// loadTinyFleet loads the tiny fleet's samples, job events and prices into s.
func loadTinyFleet(t testing.TB, s store.Store) { loadTinyFleetWith(t, s, tinyJobEvents()) }

// loadTinyFleetWith loads the tiny fleet with the given job events.
func loadTinyFleetWith(t testing.TB, s store.Store, events []schemas.JobEvent) {
	t.Helper()
	ctx := context.Background()
	l := ingest.NewLoader(s, 100000)
	energy := make([]uint64, len(tinyGPUs))
	for i := range energy {
		energy[i] = 1_000_000_000 * uint64(i+1)
	}
	for tm := at(-1, 0); tm.Before(tinyTo); tm = tm.Add(time.Minute) {
		for i, g := range tinyGPUs {
			gr, power, procs := g.state(tm)
			b := &schemas.SampleBatch{Cluster: "c1", Node: g.node}
			gs := schemas.NewGPUSample()
			gs.TimeMs, gs.Cluster, gs.Node, gs.GPUUUID, gs.GPUIndex = tm.UnixMilli(), "c1", g.node, g.uuid, uint32(i)
			gs.Model, gs.Card, gs.MIGProfile, gs.FBTotalMiB = "test card", g.card, g.mig, 81920
			gs.GrEngineActive, gs.SMActive, gs.DRAMActive, gs.PowerW = gr, gr*0.8, 0, power
			gs.PCIeRxBytesPerS, gs.PCIeTxBytesPerS = 1000, 1000
			for k := range procs {
				procs[k].TimeMs, procs[k].Cluster, procs[k].Node, procs[k].GPUUUID = tm.UnixMilli(), "c1", g.node, g.uuid
				gs.FBUsedMiB += procs[k].FBUsedMiB
			}
			// The counter reads what the GPU drew over the minute up to this sample.
			energy[i] += uint64(power) * 60000
			gs.EnergyMilliJ = energy[i]
			b.GPUs, b.Processes = []schemas.GPUSample{gs}, procs
			if err := l.AddSamples(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.AddJobs(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, tinyPrices, nil); err != nil {
		t.Fatal(err)
	}
}
