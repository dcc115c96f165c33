package billing

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files (and the fixture trace)")

func TestMain(m *testing.M) { chdbtest.Main(m) }

// The fixture fleet (testdata/fleet.jsonl.gz, written by writeFleetTrace): one
// cluster, four GPUs sampled every minute from 07:59 to 12:00 UTC on 2026-10-31 (the
// previous period) and on 2026-11-29 and 2026-11-30 (the reported month).
//
//	node-1 GPU-h1 H100-80GB   nlp/train-<day>: 08:00–12:00, 90 % busy (idle 10:00–11:00 on 11-30)
//	node-1 GPU-h2 H100-80GB   11-29: nlp/ft-1 08:00–09:00 fails, nlp/ft-2 reruns it 09:30–12:00;
//	                          free otherwise (unallocated, reporting)
//	node-2 GPU-a1 A100-40GB   vision/nb-<day> (11-29, 11-30): 08:00–12:00, busy until 09:00 then idle
//	node-3 GPU-l1 L40S-48GB   recsys/serve-<day>: 08:00–12:00, 50 % busy
//
// Prices (USD per GPU-hour): H100-80GB 4.00, 4.50 from 2026-11-15; A100-40GB 2.10;
// L40S-48GB 1.20. Energy in c1: 0.25 USD per kWh.
const fleetTrace = "testdata/fleet.jsonl.gz"

var fleetDays = []time.Time{
	time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
}

// fleetNow is when the findings analyzer looks at the fleet: near the end of the
// last day, while vision's notebook has been idle for hours.
var fleetNow = time.Date(2026, 11, 30, 11, 55, 0, 0, time.UTC)

const fleetPrices = `INSERT INTO price_book (card, effective_from, effective_to, price_per_gpu_hour, currency, note) VALUES
    ('H100-80GB', '2026-01-01 00:00:00', NULL, 4.00, 'USD', 'list'),
    ('H100-80GB', '2026-11-15 00:00:00', NULL, 4.50, 'USD', 'new contract'),
    ('A100-40GB', '2026-01-01 00:00:00', NULL, 2.10, 'USD', 'list'),
    ('L40S-48GB', '2026-01-01 00:00:00', NULL, 1.20, 'USD', 'list'),
    ('energy:c1', '2026-01-01 00:00:00', NULL, 0.25, 'USD', 'site tariff per kWh')`

// fleetFragmentation is the scheduler's fragmentation samples of c1: H100 on
// 10-31 (the previous period), 11-29 and 11-30 (November: 20 stranded
// GPU-minutes over 42 sampled minutes, TestReportFragmentation), 12-01 (after
// it); L40S on 11-29, never stranded.
const fleetFragmentation = `INSERT INTO scheduler_fragmentation (ts, cluster, card, gpus, free, stranded, waiting, free_nodes, largest_on_node) VALUES
    ('2026-10-31 09:00:00.000', 'c1', 'H100-80GB', 2, 1, 1, 1, 0, 1),
    ('2026-10-31 09:01:00.000', 'c1', 'H100-80GB', 2, 1, 1, 1, 0, 1),
    ('2026-11-29 09:00:00.000', 'c1', 'H100-80GB', 2, 1, 1, 1, 0, 1),
    ('2026-11-29 09:01:00.000', 'c1', 'H100-80GB', 2, 1, 1, 2, 0, 1),
    ('2026-11-29 09:02:00.000', 'c1', 'H100-80GB', 2, 1, 0, 0, 0, 1),
    ('2026-11-29 09:10:00.000', 'c1', 'H100-80GB', 2, 1, 1, 1, 0, 1),
    ('2026-11-29 09:11:00.000', 'c1', 'H100-80GB', 2, 1, 1, 1, 0, 1),
    ('2026-11-30 09:00:00.000', 'c1', 'H100-80GB', 2, 2, 2, 3, 1, 2),
    ('2026-11-30 09:01:00.000', 'c1', 'H100-80GB', 2, 0, 0, 0, 0, 0),
    ('2026-12-01 00:00:00.000', 'c1', 'H100-80GB', 2, 2, 2, 5, 1, 2),
    ('2026-11-29 10:00:00.000', 'c1', 'L40S-48GB', 1, 1, 0, 0, 1, 1),
    ('2026-11-29 10:01:00.000', 'c1', 'L40S-48GB', 1, 1, 0, 0, 1, 1)`

type fleetGPU struct {
	uuid, node, model string
	index, fbTotal    uint32
	power             float32
}

var fleetGPUs = []fleetGPU{
	{"GPU-h1", "node-1", "NVIDIA H100 80GB HBM3", 0, 81559, 700},
	{"GPU-h2", "node-1", "NVIDIA H100 80GB HBM3", 1, 81559, 700},
	{"GPU-a1", "node-2", "NVIDIA A100-SXM4-40GB", 0, 40960, 400},
	{"GPU-l1", "node-3", "NVIDIA L40S", 0, 46068, 350},
}

// fleetJob is one job attempt of the fixture.
type fleetJob struct {
	key, team, project, pool, model, card, gpu, node string
	workload                                         string
	submit, start, end                               time.Time
	status, rerunOf                                  string
	attempt                                          uint32
	// busy says how active the job's GPU is at t (0: idle).
	busy func(t time.Time) float32
}

func fleetJobs() []fleetJob {
	var jobs []fleetJob
	hm := func(day time.Time, h, m int) time.Time {
		return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
	}
	for i, day := range fleetDays {
		d := day.Format("0102")
		lastDay := i == len(fleetDays)-1
		jobs = append(jobs, fleetJob{
			key: "k8s/nlp/train-" + d, team: "nlp", project: "chat", pool: "training-prod", model: "llama-3-8b",
			card: "H100-80GB", gpu: "GPU-h1", node: "node-1", workload: schemas.WorkloadTraining,
			submit: hm(day, 7, 30), start: hm(day, 8, 0), end: hm(day, 12, 0), status: schemas.StatusSucceeded, attempt: 1,
			busy: func(t time.Time) float32 {
				if lastDay && !t.Before(hm(day, 10, 0)) && t.Before(hm(day, 11, 0)) {
					return 0
				}
				return 0.9
			},
		}, fleetJob{
			key: "k8s/recsys/serve-" + d, team: "recsys", project: "feed-ranking", pool: "inference-online", model: "dlrm-v2",
			card: "L40S-48GB", gpu: "GPU-l1", node: "node-3", workload: schemas.WorkloadInference,
			submit: hm(day, 7, 59), start: hm(day, 8, 0), end: hm(day, 12, 0), status: schemas.StatusSucceeded, attempt: 1,
			busy: func(time.Time) float32 { return 0.5 },
		})
		if i == 0 {
			continue
		}
		jobs = append(jobs, fleetJob{
			key: "k8s/vision/nb-" + d, team: "vision", project: "ocr", pool: "dev", model: "resnet50",
			card: "A100-40GB", gpu: "GPU-a1", node: "node-2", workload: schemas.WorkloadDev,
			submit: hm(day, 7, 0), start: hm(day, 8, 0), end: hm(day, 12, 0), status: schemas.StatusSucceeded, attempt: 1,
			busy: func(t time.Time) float32 {
				if t.Before(hm(day, 9, 0)) {
					return 0.6
				}
				return 0
			},
		})
		if i == 1 {
			jobs = append(jobs, fleetJob{
				key: "k8s/nlp/ft-1", team: "nlp", project: "finetune", pool: "training-exp", model: "llama-3-8b",
				card: "H100-80GB", gpu: "GPU-h2", node: "node-1", workload: schemas.WorkloadTraining,
				submit: hm(day, 7, 45), start: hm(day, 8, 0), end: hm(day, 9, 0), status: schemas.StatusFailed, attempt: 1,
				busy: func(time.Time) float32 { return 0.7 },
			}, fleetJob{
				key: "k8s/nlp/ft-2", team: "nlp", project: "finetune", pool: "training-exp", model: "llama-3-8b",
				card: "H100-80GB", gpu: "GPU-h2", node: "node-1", workload: schemas.WorkloadTraining,
				submit: hm(day, 9, 0), start: hm(day, 9, 30), end: hm(day, 12, 0), status: schemas.StatusSucceeded,
				attempt: 2, rerunOf: "k8s/nlp/ft-1",
				busy: func(time.Time) float32 { return 0.8 },
			})
		}
	}
	return jobs
}

// writeFleetTrace writes the fixture fleet in trace format v1, in time order.
func writeFleetTrace(w io.Writer) error {
	tw := trace.NewWriter(w, false)
	jobs := fleetJobs()
	var events []schemas.JobEvent
	for _, j := range jobs {
		base := schemas.JobEvent{Job: j.key, Cluster: "c1", Source: schemas.SourceKubernetes, Attempt: j.attempt}
		sub := base
		sub.TimeMs, sub.Event, sub.Team, sub.Project, sub.Pool, sub.Queue = j.submit.UnixMilli(), schemas.EventSubmit, j.team, j.project, j.pool, j.pool
		sub.ModelName, sub.Workload, sub.GPUs, sub.Card, sub.RerunOf = j.model, j.workload, 1, j.card, j.rerunOf
		st := base
		st.TimeMs, st.Event, st.Nodes, st.GPUUUIDs = j.start.UnixMilli(), schemas.EventStart, []string{j.node}, []string{j.gpu}
		end := base
		end.TimeMs, end.Event, end.Status = j.end.UnixMilli(), schemas.EventEnd, j.status
		if j.status == schemas.StatusFailed {
			end.ExitCode = 1
		}
		events = append(events, sub, st, end)
	}
	energy := make([]uint64, len(fleetGPUs))
	for i := range energy {
		energy[i] = 1_000_000_000 * uint64(i+1)
	}
	next := 0
	sortEvents(events)
	for _, day := range fleetDays {
		for t := day.Add(7*time.Hour + 59*time.Minute); !t.After(day.Add(12 * time.Hour)); t = t.Add(time.Minute) {
			for next < len(events) && events[next].TimeMs <= t.UnixMilli() {
				if err := tw.WriteJob(&events[next]); err != nil {
					return err
				}
				next++
			}
			for gi, g := range fleetGPUs {
				s := schemas.NewGPUSample()
				s.TimeMs, s.Cluster, s.Node, s.GPUUUID, s.GPUIndex = t.UnixMilli(), "c1", g.node, g.uuid, g.index
				s.Model, s.FBTotalMiB = g.model, g.fbTotal
				var busy float32
				var holder *fleetJob
				for k := range jobs {
					if jobs[k].gpu == g.uuid && !t.Before(jobs[k].start) && t.Before(jobs[k].end) {
						holder = &jobs[k]
						busy = jobs[k].busy(t)
					}
				}
				s.GrEngineActive, s.SMActive, s.TensorActive, s.DRAMActive = busy, busy*0.8, busy*0.4, busy*0.3
				s.GPUUtil, s.PCIeTxBytesPerS, s.PCIeRxBytesPerS = busy, 1000, 1000
				power := g.power * (0.15 + 0.85*busy)
				s.PowerW, s.TempC = power, 40+40*busy
				energy[gi] += uint64(power) * 60_000
				s.EnergyMilliJ = energy[gi]
				if holder != nil {
					s.FBUsedMiB = g.fbTotal / 2
				}
				if err := tw.WriteGPU(&s); err != nil {
					return err
				}
				if holder != nil {
					p := schemas.ProcessSample{TimeMs: s.TimeMs, Cluster: "c1", Node: g.node, GPUUUID: g.uuid, PID: 1000 + uint32(gi),
						ProcessName: "python3", Job: holder.key, FBUsedMiB: g.fbTotal / 2, SMUtil: busy * 0.8, MemUtil: busy * 0.3}
					if err := tw.WriteProcess(&p); err != nil {
						return err
					}
				}
			}
		}
	}
	for ; next < len(events); next++ {
		if err := tw.WriteJob(&events[next]); err != nil {
			return err
		}
	}
	return tw.Close()
}

func sortEvents(ev []schemas.JobEvent) {
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].TimeMs < ev[j-1].TimeMs; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
}

// TestFixtureTraceIsCurrent keeps testdata/fleet.jsonl.gz what writeFleetTrace
// writes (go test -update rewrites it).
func TestFixtureTraceIsCurrent(t *testing.T) {
	var want bytes.Buffer
	if err := writeFleetTrace(&want); err != nil {
		t.Fatal(err)
	}
	if *update {
		var gz bytes.Buffer
		tw := trace.NewWriter(&gz, true)
		r := trace.NewReader(bytes.NewReader(want.Bytes()), trace.ReaderOptions{Strict: true})
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := tw.WriteRecord(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fleetTrace, gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(fleetTrace)
	if err != nil {
		t.Fatalf("%v (run go test ./reports/billing -update)", err)
	}
	defer f.Close()
	var got bytes.Buffer
	tw := trace.NewWriter(&got, false)
	r := trace.NewReader(f, trace.ReaderOptions{Strict: true})
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("%s is not what writeFleetTrace writes (run go test ./reports/billing -update)", fleetTrace)
	}
}

// loadFleet returns a fresh store holding the fixture trace, its prices, the
// chargeback refreshed to the end of the last day and one findings pass.
func loadFleet(t testing.TB) store.Store {
	t.Helper()
	ctx := context.Background()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.FromSlash(fleetTrace))
	if err != nil {
		t.Fatalf("%v (run go test ./reports/billing -update)", err)
	}
	defer f.Close()
	l := ingest.NewLoader(s, 100000)
	r := trace.NewReader(f, trace.ReaderOptions{Strict: true})
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case trace.KindGPU:
			err = l.AddSamples(ctx, &schemas.SampleBatch{Cluster: rec.GPU.Cluster, Node: rec.GPU.Node, GPUs: []schemas.GPUSample{*rec.GPU}})
		case trace.KindProcess:
			err = l.AddSamples(ctx, &schemas.SampleBatch{Cluster: rec.Process.Cluster, Node: rec.Process.Node, Processes: []schemas.ProcessSample{*rec.Process}})
		case trace.KindJob:
			err = l.AddJobs(ctx, []schemas.JobEvent{*rec.Job})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, fleetPrices, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, fleetFragmentation, nil); err != nil {
		t.Fatal(err)
	}
	// Only the fixture's hours: a Refresh from the first hour would compute every
	// empty day in between (a minute of test time).
	for _, day := range fleetDays {
		if err := chargeback.RefreshRange(ctx, s, day.Add(7*time.Hour), day.Add(13*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := findings.New(findings.DefaultConfig(), s, findings.WithPrices(pricebook.New(s)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, fleetNow); err != nil {
		t.Fatal(err)
	}
	return s
}

func november(t testing.TB) reports.Period {
	t.Helper()
	p, err := reports.ParsePeriod("2026-11", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
