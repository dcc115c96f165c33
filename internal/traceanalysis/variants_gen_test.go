package traceanalysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The variant fleet: hand-written traces of the families docs/analyzer.md names
// (each finding kind's shapes and its look-alikes), written straight in the
// public trace format (../../shared/TRACE_FORMAT.md) by this generator, which
// shares nothing with collector/sim. TestVariantTraceUpToDate checks the
// checked-in file is what it writes; `go test -run TestVariantTraceUpToDate
// -update-variants` rewrites analyzer/testdata/variants/fleet.jsonl.gz. The truth
// of the planted cases is analyzer/testdata/truth/variants.truth.jsonl.

// variantStart is the trace's first tick; it lasts variantSpan, a tick a minute
// (± a few seconds of jitter).
var variantStart = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

const (
	variantSpan = 3 * time.Hour
	variantTick = time.Minute
)

// vsig is what a GPU (or MIG instance) shows in one tick; a field left NaN is
// absent from the line (the source does not report it).
type vsig struct {
	engine, sm, tensor, dram, util, pcieRx, pcieTx, power float64
	memMiB                                                float64
}

// vproc is one process on a GPU in one tick; smUtil NaN: no figure (NVML listed
// no sample for it, or the source has no per-process accounting).
type vproc struct {
	pid            int
	job            string
	memMiB, smUtil float64
}

// vgpu is one GPU of the fleet: its identity and what it shows at each minute
// (m, since variantStart); procs at that minute. offline, when set, is when its
// node stops reporting.
type vgpu struct {
	node, uuid, model, mig string
	index                  int
	fbTotal                float64
	at                     func(m float64, r *rand.Rand) vsig
	procs                  func(m float64, s vsig) []vproc
	noProcFigures          bool // the source gives no per-process figures (MIG)
	offline                float64
}

// vjob is a scheduler's record of one job.
type vjob struct {
	job, team, pool, workload string
	gpus                      []string
	nodes                     []string
	start, end                float64 // minutes; end 0: running at the trace's end
	status                    string
}

// noise returns v ± a uniform amount up to n, clamped to [0, 1].
func noise(r *rand.Rand, v, n float64) float64 {
	return min(1, max(0, v+(r.Float64()*2-1)*n))
}

// busy is a training step's signature on a card: SM and tensor at work, DRAM and
// PCIe moving, power near the card's busy draw.
func busy(r *rand.Rand, sm, tensor, dram, power, mem float64) vsig {
	s := noise(r, sm, 0.05)
	return vsig{engine: noise(r, min(1, sm+0.3), 0.03), sm: s, tensor: noise(r, tensor, 0.04), dram: noise(r, dram, 0.05),
		util: noise(r, 0.97, 0.03), pcieRx: 1.5e9 * (0.8 + 0.4*r.Float64()), pcieTx: 4e8 * (0.8 + 0.4*r.Float64()),
		power: power * (0.93 + 0.1*r.Float64()), memMiB: mem}
}

// flat is a stopped GPU's signature: engine at engine (≥ 0.9 for a collective
// spin, ~0 for a host or loader stall), no math, no memory traffic, PCIe at
// pcie bytes/s (a loader's trickle), power watts. About one sample in 70 has a
// blip, as real stopped jobs do (a watchdog's or a monitoring agent's copy, a
// heartbeat): DRAM or PCIe above the flat test's limit for that sample.
func flat(r *rand.Rand, engine, pcie, power, mem float64) vsig {
	s := vsig{engine: noise(r, engine, 0.01), sm: noise(r, 0.01, 0.01), tensor: 0, dram: noise(r, 0.004, 0.003),
		util: noise(r, engine, 0.01), pcieRx: pcie * r.Float64(), pcieTx: 1e4 * r.Float64(), power: power * (0.95 + 0.1*r.Float64()),
		memMiB: mem}
	if r.Float64() < 1.0/70 {
		s.dram, s.pcieTx, s.sm = 0.06, 2.4e7, 0.04
	}
	return s
}

// one is the single process of job on a GPU, with the GPU's SM activity as its own.
func one(pid int, job string) func(m float64, s vsig) []vproc {
	return func(_ float64, s vsig) []vproc {
		return []vproc{{pid: pid, job: job, memMiB: s.memMiB - 500, smUtil: s.util * boolf(s.util > 0.02)}}
	}
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

const (
	mH100 = "NVIDIA H100 80GB HBM3"
	mH200 = "NVIDIA H200"
	mA80  = "NVIDIA A100-SXM4-80GB"
	mA40  = "NVIDIA A100-SXM4-40GB"
	mL40S = "NVIDIA L40S"
)

// variantFleet is the fleet: the planted cases and the look-alikes (see the
// truth file for which is which).
func variantFleet() ([]vgpu, []vjob) {
	var gpus []vgpu
	var jobs []vjob
	uuid := func(node string, i int) string { return fmt.Sprintf("GPU-%s-%04d-0000-0000-%012d", node, i, i) }
	add := func(node, model string, fb float64, first int, js vjob, at func(i int) func(m float64, r *rand.Rand) vsig, procs func(i int) func(m float64, s vsig) []vproc, n int) {
		for i := first; i < first+n; i++ {
			u := uuid(node, i)
			js.gpus = append(js.gpus, u)
			gpus = append(gpus, vgpu{node: node, uuid: u, model: model, index: i, fbTotal: fb, at: at(i), procs: procs(i)})
		}
		js.nodes = []string{node}
		jobs = append(jobs, js)
	}
	// n1, 4 × H100: a 4-GPU training job that hangs in a collective at 01:30 on
	// every rank: engines busy, no SM, tensor, DRAM or PCIe, power down to a
	// quarter; 70 GB of 80 held throughout (memory_capacity's memory test holds).
	hungAt := 90.0
	add("n1", mH100, 81559, 0, vjob{job: "slurm/c1/2001", team: "llm", pool: "training-prod", workload: "training"},
		func(i int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if m < hungAt+float64(i)*0.2 { // the ranks stop within seconds of each other
					return busy(r, 0.62, 0.42, 0.38, 560, 71000)
				}
				return flat(r, 0.99, 5e4, 165, 71000)
			}
		}, func(i int) func(float64, vsig) []vproc { return one(3100+i, "slurm/c1/2001") }, 4)

	// n2, 4 × A100-80GB: a 2-GPU job whose host side stalls at 01:20 (engines
	// idle, 60 GB held, power at idle), and a 2-GPU job whose data loader stalls
	// at 01:40 (a trickle of reads, ≤ 4 MB/s).
	add("n2", mA80, 81920, 0, vjob{job: "slurm/c1/2002", team: "vision", pool: "training-exp", workload: "training"},
		func(i int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if m < 80 {
					return busy(r, 0.55, 0.35, 0.42, 330, 61000)
				}
				return flat(r, 0, 0, 62, 61000)
			}
		}, func(i int) func(float64, vsig) []vproc { return one(3200+i, "slurm/c1/2002") }, 2)
	add("n2", mA80, 81920, 2, vjob{job: "slurm/c1/2003", team: "vision", pool: "training-exp", workload: "training"},
		func(i int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if m < 100 {
					return busy(r, 0.48, 0.3, 0.35, 300, 52000)
				}
				return flat(r, 0.01, 4e6, 70, 52000)
			}
		}, func(i int) func(float64, vsig) []vproc { return one(3300+i, "slurm/c1/2003") }, 2)

	// n3, 2 × L40S. GPU 0 is time-sliced: a busy inference server beside a
	// notebook that holds 8 GB and runs nothing (NVML lists no sample for it:
	// no sm_util on its lines while its neighbour has one). GPU 1: bursty
	// inference, 2 busy minutes in 10 (a look-alike of idle).
	ts := uuid("n3", 0)
	gpus = append(gpus, vgpu{node: "n3", uuid: ts, model: mL40S, index: 0, fbTotal: 46068,
		at: func(m float64, r *rand.Rand) vsig {
			s := busy(r, 0.45, 0.2, 0.3, 250, 30000)
			return s
		},
		procs: func(m float64, s vsig) []vproc {
			return []vproc{{pid: 4100, job: "k8s/inf/serve-a", memMiB: 21500, smUtil: s.util},
				{pid: 4101, job: "k8s/nb/tenant-b", memMiB: 8000, smUtil: math.NaN()}}
		}})
	jobs = append(jobs, vjob{job: "k8s/inf/serve-a", team: "search", pool: "inference-batch", workload: "inference", gpus: []string{ts}, nodes: []string{"n3"}},
		vjob{job: "k8s/nb/tenant-b", team: "research", pool: "dev", workload: "dev", gpus: []string{ts}, nodes: []string{"n3"}})
	add("n3", mL40S, 46068, 1, vjob{job: "k8s/inf/bursty", team: "search", pool: "inference-batch", workload: "inference"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if int(m)%10 < 2 {
					return busy(r, 0.5, 0.3, 0.4, 280, 20000)
				}
				return vsig{engine: 0, sm: 0, tensor: 0, dram: 0, util: 0, power: 35 + 3*r.Float64(), memMiB: 20000}
			}
		}, func(int) func(float64, vsig) []vproc { return one(4200, "k8s/inf/bursty") }, 1)

	// n4, 4 × H100: an idle job (2 GB held, nothing run); a job that ends at
	// 01:00 and leaves its process (pid 7011, 30 GB) behind; a memory-bound job
	// (DRAM 0.75, SM 0.25); a small job on a whole H100 (6 GB, SM 0.1 in bursts).
	add("n4", mH100, 81559, 0, vjob{job: "slurm/c1/2010", team: "nlp", pool: "training-exp", workload: "training"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				return vsig{power: 70 + 2*r.Float64(), memMiB: 2500}
			}
		}, func(int) func(float64, vsig) []vproc { return one(7010, "slurm/c1/2010") }, 1)
	add("n4", mH100, 81559, 1, vjob{job: "slurm/c1/2011", team: "nlp", pool: "training-exp", workload: "training", end: 60, status: "succeeded"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if m < 60 {
					return busy(r, 0.6, 0.4, 0.4, 550, 30500)
				}
				return vsig{power: 72 + 2*r.Float64(), memMiB: 30500}
			}
		}, func(int) func(float64, vsig) []vproc { return one(7011, "slurm/c1/2011") }, 1)
	add("n4", mH100, 81559, 2, vjob{job: "slurm/c1/2012", team: "recsys", pool: "training-exp", workload: "training"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				s := busy(r, 0.25, 0.05, 0.75, 450, 50000)
				s.tensor = noise(r, 0.04, 0.02)
				return s
			}
		}, func(int) func(float64, vsig) []vproc { return one(7012, "slurm/c1/2012") }, 1)
	add("n4", mH100, 81559, 3, vjob{job: "slurm/c1/2013", team: "recsys", pool: "training-exp", workload: "training"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if int(m)%5 < 3 {
					s := busy(r, 0.12, 0.03, 0.05, 140, 6000)
					s.engine, s.util = noise(r, 0.35, 0.05), noise(r, 0.4, 0.05)
					return s
				}
				return vsig{engine: 0, util: 0, power: 75, memMiB: 6000}
			}
		}, func(int) func(float64, vsig) []vproc { return one(7013, "slurm/c1/2013") }, 1)

	// n5, 4 × H200, look-alikes: a 2-GPU job that checkpoints 4 minutes in 30
	// (engines idle, PCIe writing); a job with 20-minute evaluation phases every
	// hour (SM 0.25, DRAM busy); a job that starts at 01:00 with 25 minutes of
	// warm-up (loading data over PCIe, engines idle, memory filling).
	add("n5", mH200, 143771, 0, vjob{job: "slurm/c1/2020", team: "llm", pool: "training-prod", workload: "training"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if int(m)%30 >= 26 {
					return vsig{engine: noise(r, 0.03, 0.02), sm: 0.01, dram: 0.05, util: 0.05, pcieTx: 3e9 * (0.8 + 0.4*r.Float64()),
						pcieRx: 1e6, power: 140, memMiB: 120000}
				}
				return busy(r, 0.6, 0.35, 0.45, 620, 120000)
			}
		}, func(i int) func(float64, vsig) []vproc { return one(5100+i, "slurm/c1/2020") }, 2)
	add("n5", mH200, 143771, 2, vjob{job: "slurm/c1/2021", team: "llm", pool: "training-prod", workload: "training"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if int(m)%60 >= 40 {
					s := busy(r, 0.25, 0.08, 0.45, 380, 90000)
					s.pcieRx /= 4
					return s
				}
				return busy(r, 0.65, 0.4, 0.4, 640, 90000)
			}
		}, func(int) func(float64, vsig) []vproc { return one(5200, "slurm/c1/2021") }, 1)
	add("n5", mH200, 143771, 3, vjob{job: "slurm/c1/2022", team: "llm", pool: "training-prod", workload: "training", start: 60},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				switch {
				case m < 60:
					return vsig{power: 75, memMiB: 0}
				case m < 85:
					return vsig{engine: noise(r, 0.02, 0.02), sm: 0, util: 0.02, pcieRx: 2.5e9 * (0.8 + 0.4*r.Float64()), power: 110,
						memMiB: 4000 + (m-60)*3000}
				}
				return busy(r, 0.58, 0.38, 0.4, 600, 80000)
			}
		}, func(int) func(float64, vsig) []vproc {
			o := one(5300, "slurm/c1/2022")
			return func(m float64, s vsig) []vproc {
				if m < 60 {
					return nil
				}
				return o(m, s)
			}
		}, 1)

	// n6, A100-40GB: a compute-light job (SM 0.08 while the engine is busy half
	// the time: a small model stepping an environment on the host).
	add("n6", mA40, 40960, 0, vjob{job: "slurm/c1/2030", team: "rl", pool: "dev", workload: "training"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig {
				if r.Float64() < 0.5 {
					return vsig{engine: noise(r, 0.3, 0.1), sm: noise(r, 0.08, 0.03), tensor: 0.01, dram: noise(r, 0.04, 0.02),
						util: noise(r, 0.5, 0.1), pcieRx: 2e7 * r.Float64(), pcieTx: 1e7 * r.Float64(), power: 110, memMiB: 9000}
				}
				return vsig{engine: 0.01, sm: 0.005, util: 0.02, dram: 0.002, pcieRx: 3e7 * r.Float64(), power: 70, memMiB: 9000}
			}
		}, func(int) func(float64, vsig) []vproc { return one(6100, "slurm/c1/2030") }, 1)

	// n7, an A100-80GB in MIG mode: a busy 3g.40gb instance and an idle 4g.40gb
	// one; no per-process figures inside MIG instances.
	for i, c := range []struct {
		prof, job string
		busy      bool
	}{{"3g.40gb", "k8s/vision/mig-busy", true}, {"4g.40gb", "k8s/vision/mig-idle", false}} {
		u := fmt.Sprintf("MIG-n7-%04d-0000-0000-%012d", i, i)
		b, job, pid := c.busy, c.job, 8100+i
		gpus = append(gpus, vgpu{node: "n7", uuid: u, model: mA80, mig: c.prof, index: 0, fbTotal: 40192, noProcFigures: true,
			at: func(m float64, r *rand.Rand) vsig {
				if b {
					s := busy(r, 0.5, 0.3, 0.35, math.NaN(), 25000)
					s.util = math.NaN() // no GPU utilisation per MIG instance
					return s
				}
				return vsig{util: math.NaN(), power: math.NaN(), memMiB: 12000}
			},
			procs: func(m float64, s vsig) []vproc {
				return []vproc{{pid: pid, job: job, memMiB: s.memMiB - 300, smUtil: math.NaN()}}
			}})
		jobs = append(jobs, vjob{job: job, team: "vision", pool: "inference-batch", workload: "batch-inference", gpus: []string{u}, nodes: []string{"n7"}})
	}

	// n8, an H100 whose node goes offline at 01:15 with its busy job still
	// scheduled: no samples after, nothing to judge.
	add("n8", mH100, 81559, 0, vjob{job: "slurm/c1/2040", team: "nlp", pool: "training-exp", workload: "training"},
		func(int) func(float64, *rand.Rand) vsig {
			return func(m float64, r *rand.Rand) vsig { return busy(r, 0.6, 0.4, 0.4, 560, 60000) }
		}, func(int) func(float64, vsig) []vproc { return one(9100, "slurm/c1/2040") }, 1)
	gpus[len(gpus)-1].offline = 75

	return gpus, jobs
}

// writeVariantTrace returns the variant fleet's trace: each tick, its job events,
// then a line per GPU and per process with a few seconds of jitter, about 1 % of
// lines written twice and about 1 % held back and written 2–4 minutes late
// (within the reader's reorder window).
func writeVariantTrace() []byte {
	r := rand.New(rand.NewPCG(39, 2026))
	gpus, jobs := variantFleet()
	var buf bytes.Buffer
	put := func(v map[string]any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	at := func(m float64) string {
		return variantStart.Add(time.Duration(m * float64(time.Minute))).Format(time.RFC3339Nano)
	}
	type late struct {
		due  int
		line map[string]any
	}
	var held []late
	ticks := int(variantSpan / variantTick)
	for k := 0; k <= ticks; k++ {
		m := float64(k)
		for _, j := range jobs { // in time order: a job starting later is announced then
			if int(j.start) == k {
				put(map[string]any{"type": "job", "ts": at(j.start), "job": j.job, "event": "submit", "cluster": "c1", "team": j.team,
					"project": j.team + "-proj", "queue": j.pool, "pool": j.pool, "workload": j.workload, "gpus": len(j.gpus), "attempt": 1})
				put(map[string]any{"type": "job", "ts": at(j.start), "job": j.job, "event": "start", "cluster": "c1", "nodes": j.nodes,
					"gpu_uuids": j.gpus, "attempt": 1})
			}
			if j.end > 0 && int(j.end) == k {
				put(map[string]any{"type": "job", "ts": at(j.end), "job": j.job, "event": "end", "cluster": "c1",
					"status": j.status, "exit_code": 0, "attempt": 1})
			}
		}
		for _, g := range gpus {
			if g.offline > 0 && m >= g.offline {
				continue
			}
			tm := m + (r.Float64()*2-1)*3/60 // ± 3 s
			s := g.at(m, r)
			line := map[string]any{"type": "gpu", "ts": at(tm), "cluster": "c1", "node": g.node, "gpu_uuid": g.uuid,
				"gpu_index": g.index, "model": g.model, "fb_total_mib": g.fbTotal, "fb_used_mib": math.Round(s.memMiB)}
			if g.mig != "" {
				line["mig_profile"] = g.mig
			}
			for _, f := range []struct {
				name string
				v    float64
				prec float64
			}{{"gr_engine_active", s.engine, 1000}, {"sm_active", s.sm, 1000}, {"tensor_active", s.tensor, 1000},
				{"dram_active", s.dram, 1000}, {"gpu_util", s.util, 100}, {"pcie_rx_bytes_per_s", s.pcieRx, 1e-3},
				{"pcie_tx_bytes_per_s", s.pcieTx, 1e-3}, {"power_w", s.power, 10}} {
				if !math.IsNaN(f.v) {
					line[f.name] = math.Round(f.v*f.prec) / f.prec
				}
			}
			lines := []map[string]any{line}
			if g.procs != nil {
				for _, p := range g.procs(m, s) {
					pl := map[string]any{"type": "process", "ts": line["ts"], "cluster": "c1", "node": g.node, "gpu_uuid": g.uuid,
						"pid": p.pid, "process_name": "python3", "job": p.job, "fb_used_mib": math.Round(max(p.memMiB, 0))}
					if !math.IsNaN(p.smUtil) && !g.noProcFigures {
						pl["sm_util"] = math.Round(p.smUtil*100) / 100
					}
					lines = append(lines, pl)
				}
			}
			for _, l := range lines {
				switch x := r.Float64(); {
				case x < 0.01:
					put(l)
					put(l)
				case x < 0.02 && k+4 <= ticks:
					held = append(held, late{due: k + 2 + r.IntN(3), line: l})
				default:
					put(l)
				}
			}
		}
		held = slices.DeleteFunc(held, func(h late) bool {
			if h.due == k {
				put(h.line)
				return true
			}
			return false
		})
	}
	return buf.Bytes()
}
