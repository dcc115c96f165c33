package findings

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// fakePrices is a price book in USD.
type fakePrices map[string]float64

func (p fakePrices) PricePerGPUHour(_ context.Context, card string, _ time.Time) (float64, string, error) {
	if v, ok := p[card]; ok {
		return v, "USD", nil
	}
	return 0, "", fmt.Errorf("card %s: %w", card, errNotInBook)
}

var errNotInBook = errors.New("not in the price book")

// testPrices prices the simulator's cards and a few smaller ones.
var testPrices = fakePrices{
	"H100-80GB": 4.0, "A100-80GB": 2.6, "A100-40GB": 1.8, "L40S-48GB": 1.5, "L4-24GB": 0.8,
}

// fakeBus records what was published.
type fakeBus struct {
	mu   sync.Mutex
	msgs []busMsg
	fail bool
}

type busMsg struct {
	subject, id string
	data        []byte
}

func (b *fakeBus) Publish(_ context.Context, subject, msgID string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail {
		return errors.New("bus down")
	}
	b.msgs = append(b.msgs, busMsg{subject, msgID, data})
	return nil
}

func (b *fakeBus) take() []busMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.msgs
	b.msgs = nil
	return out
}

// fixture is a fresh store with gpupool's schema and a loader into it.
type fixture struct {
	t  testing.TB
	s  store.Store
	l  *ingest.Loader
	t0 time.Time
}

var fixtureStart = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func newFixture(t testing.TB) *fixture {
	t.Helper()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, s: s, l: ingest.NewLoader(s, 200000), t0: fixtureStart}
}

// at is the fixture start plus d.
func (fx *fixture) at(d time.Duration) time.Time { return fx.t0.Add(d) }

// job records a job that ran on gpus of node from start to end (zero: still
// running).
func (fx *fixture) job(key, team, pool, node string, gpus []string, start, end time.Time) {
	fx.t.Helper()
	base := schemas.JobEvent{Job: key, Cluster: "c1", Source: schemas.SourceKubernetes, Attempt: 1}
	sub := base
	sub.TimeMs, sub.Event, sub.Team, sub.Project, sub.Pool, sub.Queue = start.Add(-time.Minute).UnixMilli(), schemas.EventSubmit, team, team+"-proj", pool, team+"-"+pool
	sub.ModelName, sub.Workload, sub.GPUs = "m", schemas.WorkloadDev, uint32(len(gpus))
	adm := base
	adm.TimeMs, adm.Event = start.UnixMilli(), schemas.EventAdmit
	st := base
	st.TimeMs, st.Event, st.Nodes, st.GPUUUIDs = start.UnixMilli(), schemas.EventStart, []string{node}, gpus
	evs := []schemas.JobEvent{sub, adm, st}
	if !end.IsZero() {
		e := base
		e.TimeMs, e.Event, e.Status = end.UnixMilli(), schemas.EventEnd, schemas.StatusSucceeded
		evs = append(evs, e)
	}
	if err := fx.l.AddJobs(fx.t.Context(), evs); err != nil {
		fx.t.Fatal(err)
	}
}

// gpu is a GPU (or MIG instance) to sample.
type gpu struct {
	uuid, card, mig string
	fbTotal         uint32
}

var (
	h100 = func(uuid string) gpu { return gpu{uuid: uuid, card: "H100-80GB", fbTotal: 81559} }
	l40s = func(uuid string) gpu { return gpu{uuid: uuid, card: "L40S-48GB", fbTotal: 46068} }
	mig1 = func(uuid string) gpu { return gpu{uuid: uuid, card: "A100-80GB", mig: "1g.10gb", fbTotal: 9856} }
)

// sampleFunc fills one tick of one GPU; a returned process (pid != 0) is sampled too.
type sampleFunc func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample

// series samples g on node every tick over [from, to], el being the time since from.
func (fx *fixture) series(node string, g gpu, from, to time.Time, tick time.Duration, f sampleFunc) {
	fx.t.Helper()
	for at := from; !at.After(to); at = at.Add(tick) {
		s := schemas.NewGPUSample()
		s.TimeMs, s.GPUUUID, s.Card, s.MIGProfile, s.FBTotalMiB = at.UnixMilli(), g.uuid, g.card, g.mig, g.fbTotal
		s.Model = "model of " + g.card
		procs := f(at.Sub(from), &s)
		b := &schemas.SampleBatch{Cluster: "c1", Node: node, GPUs: []schemas.GPUSample{s}}
		for _, p := range procs {
			p.TimeMs, p.GPUUUID = s.TimeMs, g.uuid
			b.Processes = append(b.Processes, p)
		}
		if err := fx.l.AddSamples(fx.t.Context(), b); err != nil {
			fx.t.Fatal(err)
		}
	}
}

func (fx *fixture) flush() {
	fx.t.Helper()
	if err := fx.l.Flush(fx.t.Context()); err != nil {
		fx.t.Fatal(err)
	}
}

// analyzer returns an analyzer over the fixture with cfg, test prices and bus.
func (fx *fixture) analyzer(cfg Config, bus *fakeBus) *Analyzer {
	fx.t.Helper()
	var pub Publisher
	if bus != nil {
		pub = bus
	}
	a, err := New(cfg, fx.s, WithPrices(testPrices), WithPublisher(pub))
	if err != nil {
		fx.t.Fatal(err)
	}
	return a
}

// set fills the activity fields of a sample.
func set(s *schemas.GPUSample, gr, sm, tensor, dram float32, pcie float32, usedMiB uint32) {
	s.GrEngineActive, s.SMActive, s.TensorActive, s.DRAMActive = gr, sm, tensor, dram
	s.SMOccupancy, s.GPUUtil = sm/2, min(gr*1.05, 1)
	s.PCIeRxBytesPerS, s.PCIeTxBytesPerS = pcie*0.8, pcie*0.2
	s.FBUsedMiB = usedMiB
}

// proc is one process row holding mem MiB with the given SM share.
func proc(pid uint32, job string, mem uint32, sm float32) []schemas.ProcessSample {
	return []schemas.ProcessSample{{PID: pid, ProcessName: "python3", Job: job, FBUsedMiB: mem, SMUtil: sm, MemUtil: sm / 2}}
}

// byKind indexes findings by kind and job (zombies by node/pid).
func byKind(fs []schemas.Finding) map[schemas.FindingKind]map[string]schemas.Finding {
	out := map[schemas.FindingKind]map[string]schemas.Finding{}
	for _, f := range fs {
		if out[f.Kind] == nil {
			out[f.Kind] = map[string]schemas.Finding{}
		}
		key := f.Job
		if f.Kind == schemas.KindZombie {
			key = fmt.Sprintf("%s/%d", f.Node, f.PID)
		}
		out[f.Kind][key] = f
	}
	return out
}
