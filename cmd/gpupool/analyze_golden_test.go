package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

var update = flag.Bool("update", false, "rewrite testdata: the shared/MIG/hung trace and its golden report")

const (
	sharedTrace  = "testdata/shared_mig_hung.jsonl.gz"
	sharedGolden = "testdata/shared_mig_hung.table.golden"
)

// sharedGPU is one GPU of the shared/MIG/hung trace: its samples and its
// processes' at a time from the trace's start.
type sharedGPU struct {
	node, uuid, model, mig string
	fbTotal                uint32
	state                  func(d time.Duration) (g gpuState, procs []schemas.ProcessSample)
}

type gpuState struct{ gr, sm, tensor, dram, pcie float32 }

// writeSharedTrace writes 3 hours of three nodes sampled every 30 s, as a collector
// records them (TRACE_FORMAT.md):
//
//	n1  2 × H100   k8s/ml/train-hung (training-prod, 2 GPUs): busy for 90 min, then
//	               hung in a collective on both GPUs at once: the engine spinning
//	               (99 %), SM 5 %, no tensor, DRAM or PCIe traffic, memory held
//	n2  1 × L40S   time-sliced: k8s/recsys/ranker (training-exp) busy, and
//	               k8s/ds/notebook (dev) holding 12 GiB with no activity of its own
//	n3  A100-40GB  MIG 3g.20gb: k8s/vision/mig-busy (training-exp) busy;
//	               MIG 4g.20gb: k8s/vision/mig-idle (dev) holding memory, idle
func writeSharedTrace(t *testing.T, path string) {
	t.Helper()
	const span = 3 * time.Hour
	busy := gpuState{gr: 0.95, sm: 0.6, tensor: 0.4, dram: 0.3, pcie: 2e9}
	hungAt := 90 * time.Minute
	proc := func(pid uint32, job string, mib uint32, sm, mem float32) schemas.ProcessSample {
		return schemas.ProcessSample{PID: pid, ProcessName: "python3", Job: job, FBUsedMiB: mib, SMUtil: sm, MemUtil: mem}
	}
	trainGPU := func(uuid string, pid uint32) sharedGPU {
		return sharedGPU{node: "n1", uuid: uuid, model: "NVIDIA H100 80GB HBM3", fbTotal: 81559,
			state: func(d time.Duration) (gpuState, []schemas.ProcessSample) {
				if d < hungAt {
					return busy, []schemas.ProcessSample{proc(pid, "k8s/ml/train-hung", 60000, busy.sm, busy.dram)}
				}
				return gpuState{gr: 0.99, sm: 0.05, dram: 0.002, pcie: 2000}, []schemas.ProcessSample{proc(pid, "k8s/ml/train-hung", 60000, 0.05, 0)}
			}}
	}
	gpus := []sharedGPU{
		trainGPU("GPU-00000000-0000-0000-0000-0000000000a1", 1001),
		trainGPU("GPU-00000000-0000-0000-0000-0000000000a2", 1002),
		{node: "n2", uuid: "GPU-00000000-0000-0000-0000-0000000000b1", model: "NVIDIA L40S", fbTotal: 46068,
			state: func(time.Duration) (gpuState, []schemas.ProcessSample) {
				return gpuState{gr: 0.7, sm: 0.5, tensor: 0.2, dram: 0.2, pcie: 1e9}, []schemas.ProcessSample{
					proc(2001, "k8s/recsys/ranker", 20000, 0.5, 0.2), proc(2002, "k8s/ds/notebook", 12000, 0, 0)}
			}},
		{node: "n3", uuid: "MIG-00000000-0000-0000-0000-0000000000c1", model: "NVIDIA A100-SXM4-40GB", mig: "3g.20gb", fbTotal: 40960,
			state: func(time.Duration) (gpuState, []schemas.ProcessSample) {
				return gpuState{gr: 0.8, sm: 0.7, tensor: 0.3, dram: 0.4, pcie: 5e8}, []schemas.ProcessSample{proc(3001, "k8s/vision/mig-busy", 15000, 0.7, 0.4)}
			}},
		{node: "n3", uuid: "MIG-00000000-0000-0000-0000-0000000000c2", model: "NVIDIA A100-SXM4-40GB", mig: "4g.20gb", fbTotal: 40960,
			state: func(time.Duration) (gpuState, []schemas.ProcessSample) {
				return gpuState{}, []schemas.ProcessSample{proc(3002, "k8s/vision/mig-idle", 10000, 0, 0)}
			}},
	}
	jobs := []struct {
		job, team, pool, workload string
		node                      string
		uuids                     []string
	}{
		{"k8s/ml/train-hung", "ml", "training-prod", schemas.WorkloadTraining, "n1", []string{gpus[0].uuid, gpus[1].uuid}},
		{"k8s/recsys/ranker", "recsys", "training-exp", schemas.WorkloadTraining, "n2", []string{gpus[2].uuid}},
		{"k8s/ds/notebook", "ds", "dev", schemas.WorkloadDev, "n2", []string{gpus[2].uuid}},
		{"k8s/vision/mig-busy", "vision", "training-exp", schemas.WorkloadTraining, "n3", []string{gpus[3].uuid}},
		{"k8s/vision/mig-idle", "vision", "dev", schemas.WorkloadDev, "n3", []string{gpus[4].uuid}},
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := trace.NewWriter(f, true)
	for _, j := range jobs {
		base := schemas.JobEvent{Job: j.job, Cluster: "c1", Attempt: 1, TimeMs: traceStart.UnixMilli()}
		sub, st := base, base
		sub.Event, sub.Team, sub.Project, sub.Pool, sub.Queue = schemas.EventSubmit, j.team, j.team+"-proj", j.pool, j.pool
		sub.Workload, sub.GPUs = j.workload, uint32(len(j.uuids))
		st.Event, st.Nodes, st.GPUUUIDs = schemas.EventStart, []string{j.node}, j.uuids
		for _, e := range []*schemas.JobEvent{&sub, &st} {
			if err := w.WriteJob(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for d := time.Duration(0); d <= span; d += 30 * time.Second {
		at := traceStart.Add(d)
		for _, node := range []string{"n1", "n2", "n3"} {
			b := &schemas.SampleBatch{Cluster: "c1", Node: node}
			for i, g := range gpus {
				if g.node != node {
					continue
				}
				st, procs := g.state(d)
				s := schemas.NewGPUSample()
				s.TimeMs, s.GPUUUID, s.GPUIndex, s.Model, s.MIGProfile, s.FBTotalMiB = at.UnixMilli(), g.uuid, uint32(i%2), g.model, g.mig, g.fbTotal
				s.GrEngineActive, s.SMActive, s.TensorActive, s.DRAMActive, s.GPUUtil = st.gr, st.sm, st.tensor, st.dram, st.gr
				s.PCIeRxBytesPerS, s.PCIeTxBytesPerS, s.PowerW = st.pcie/2, st.pcie/2, 60+300*st.sm
				for k := range procs {
					procs[k].TimeMs, procs[k].GPUUUID = s.TimeMs, g.uuid
					s.FBUsedMiB += procs[k].FBUsedMiB
				}
				b.GPUs, b.Processes = append(b.GPUs, s), append(b.Processes, procs...)
			}
			if err := w.WriteBatch(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeSharedMIGHungGolden runs gpupool analyze --trace on a recorded trace
// with a time-sliced GPU, MIG slices and a hung two-GPU job, and compares the
// table it prints with a golden file (go test ./cmd/gpupool -run
// TestAnalyzeSharedMIGHungGolden -update rewrites the trace and the golden file).
// Beyond the golden file it checks what the report must say: the hung job, the
// idle tenant beside its busy neighbour and the idle MIG slice are found, the
// busy jobs are not, and the idle tenant's share of its GPU is charged as idle.
func TestAnalyzeSharedMIGHungGolden(t *testing.T) {
	if *update {
		writeSharedTrace(t, sharedTrace)
	}
	if _, err := os.Stat(sharedTrace); err != nil {
		t.Fatalf("%v (go test ./cmd/gpupool -run TestAnalyzeSharedMIGHungGolden -update writes it)", err)
	}
	dir := t.TempDir()
	g := &Globals{DataDir: dir, CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	var out, errOut bytes.Buffer
	cmd := &AnalyzeCmd{Trace: sharedTrace, Format: "table", out: &out, errOut: &errOut}
	if err := cmd.Run(g, t.Context()); err != nil {
		t.Fatalf("analyze: %v\nstderr:\n%s", err, errOut.String())
	}
	if *update {
		if err := os.WriteFile(sharedGolden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(sharedGolden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("report differs from %s (rerun with -update if intended):\n--- got\n%s\n--- want\n%s", sharedGolden, out.String(), want)
	}

	out.Reset()
	cmd.Format = "json"
	if err := cmd.Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Findings []struct {
			Kind          string             `json:"kind"`
			Job           string             `json:"job"`
			Evidence      map[string]float64 `json:"evidence"`
			WasteGPUHours float64            `json:"waste_gpu_hours"`
		} `json:"findings"`
		Chargeback []struct {
			Job          string  `json:"job"`
			Card         string  `json:"card"`
			GPUHours     float64 `json:"gpu_hours"`
			IdleGPUHours float64 `json:"idle_gpu_hours"`
			UsedGPUHours float64 `json:"used_gpu_hours"`
		} `json:"chargeback"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("json: %v", err)
	}
	found := map[string]bool{}
	for _, f := range rep.Findings {
		found[f.Kind+" "+f.Job] = true
		switch f.Job {
		case "k8s/recsys/ranker", "k8s/vision/mig-busy":
			t.Errorf("a busy job has a finding: %+v", f)
		}
		if f.Kind == string(schemas.KindIdle) && f.Job == "k8s/ds/notebook" && f.Evidence["shared_gpus"] != 1 {
			t.Errorf("the idle tenant's finding does not say it shares its GPU: %+v", f)
		}
		if f.Kind == string(schemas.KindHung) && f.WasteGPUHours < 2 {
			t.Errorf("hung finding wastes %g GPU-hours, want at least 2 (2 GPUs, over an hour hung)", f.WasteGPUHours)
		}
	}
	for _, w := range []string{"hung k8s/ml/train-hung", "idle k8s/ds/notebook", "idle k8s/vision/mig-idle"} {
		if !found[w] {
			t.Errorf("no %s finding; found %v", w, found)
		}
	}
	cb := map[string][3]float64{}
	for _, r := range rep.Chargeback {
		cb[r.Job] = [3]float64{r.GPUHours, r.UsedGPUHours, r.IdleGPUHours}
	}
	// The L40S is split 20000:12000 by memory: the notebook pays 3/8 of 3 hours,
	// all idle; the ranker 5/8, all used.
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.02 }
	if c := cb["k8s/ds/notebook"]; !near(c[0], 3*12./32) || !near(c[2], c[0]) || c[1] > 0.02 {
		t.Errorf("notebook's chargeback (gpu, used, idle) %v, want its 1.125 GPU-hours all idle", c)
	}
	if c := cb["k8s/recsys/ranker"]; !near(c[0], 3*20./32) || !near(c[1], c[0]) {
		t.Errorf("ranker's chargeback (gpu, used, idle) %v, want its 1.875 GPU-hours all used", c)
	}
	if c := cb["k8s/vision/mig-idle"]; !near(c[0], 3*4./7) || !near(c[2], c[0]) {
		t.Errorf("MIG 4g.20gb's chargeback (gpu, used, idle) %v, want 4/7 of 3 hours, all idle", c)
	}
}
