package frag

import (
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/replay.golden")

// synthTrace is a small cluster (22 GPUs) and 240 tasks arriving a minute
// apart on average, enough to queue: fractions, whole GPUs, gangs of 2, 4 and
// 8, CPU-only tasks, some never scheduled, one running before the window.
func synthTrace() Trace {
	nodes := []NodeSpec{
		{Name: "g2-0", CPUMilli: 64000, MemoryMiB: 262144, GPUs: 8, Model: "G2"},
		{Name: "g2-1", CPUMilli: 64000, MemoryMiB: 262144, GPUs: 8, Model: "G2"},
		{Name: "t4-0", CPUMilli: 16000, MemoryMiB: 65536, GPUs: 2, Model: "T4"},
		{Name: "t4-1", CPUMilli: 16000, MemoryMiB: 65536, GPUs: 2, Model: "T4"},
		{Name: "v100-0", CPUMilli: 32000, MemoryMiB: 131072, GPUs: 4, Model: "V100M16"},
	}
	rng := rand.New(rand.NewPCG(7, 7))
	tasks := []Task{{Name: "early", CPUMilli: 4000, MemoryMiB: 8192, GPUs: 1, GPUMilli: 1000, Created: 0, Scheduled: 0, Deleted: 20000}}
	at := int64(1000)
	for i := range 240 {
		t := Task{Name: "t", CPUMilli: 1000 + rng.Int64N(8000), MemoryMiB: 1024 + rng.Int64N(16384), Created: at}
		switch r := rng.IntN(20); {
		case r < 3:
		case r < 10:
			t.GPUs, t.GPUMilli = 1, 100*(1+rng.IntN(9))
		case r < 17:
			t.GPUs, t.GPUMilli = 1, MilliGPU
		default:
			t.GPUs, t.GPUMilli = []int{2, 4, 8}[rng.IntN(3)], MilliGPU
		}
		t.Scheduled, t.Deleted = at+rng.Int64N(5), at+10+rng.Int64N(3000)
		if i%25 == 0 {
			t.Scheduled = -1
		}
		tasks = append(tasks, t)
		at += rng.Int64N(120)
	}
	tasks[2].Created, tasks[2].Scheduled, tasks[2].Deleted = 900, 900, 1000 // the first end: the window starts here
	return Trace{Nodes: nodes, Tasks: tasks}
}

func synthConfig() ReplayConfig {
	cfg := DefaultReplayConfig()
	cfg.Compress, cfg.Nodes, cfg.Samples = 1, 1, 500
	return cfg
}

func TestPrepareReplayWindowAndSkips(t *testing.T) {
	tr := synthTrace()
	in, err := PrepareReplay(tr, synthConfig())
	if err != nil {
		t.Fatal(err)
	}
	if in.Skipped != 10 || len(in.Jobs) != 231 || in.Start != 1000 {
		t.Fatalf("skipped %d, jobs %d, start %d; want 10, 231, 1000", in.Skipped, len(in.Jobs), in.Start)
	}
	if j := in.Jobs[0]; tr.Tasks[j.Task].Name != "early" || j.Arrive != 0 || j.Run != 19000 {
		t.Errorf("the task running before the window: %+v, want arrival 0 and the 19000 s it had left", j)
	}
	for i, j := range in.Jobs[1:] {
		if j.Arrive < in.Jobs[i].Arrive || j.Run < 0 || j.Arrive > in.Horizon {
			t.Fatalf("job %d: %+v out of order or outside the window (horizon %g)", i+1, j, in.Horizon)
		}
	}
}

func TestPrepareReplayCompressionReachesTheLoad(t *testing.T) {
	cfg := synthConfig()
	cfg.Compress, cfg.Load = 0, 0.9
	in, err := PrepareReplay(synthTrace(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(in.Load-0.9) > 1e-6 || in.Compress <= 1 {
		t.Fatalf("load %g at compression %g, want 0.9 with some compression", in.Load, in.Compress)
	}
	cfg.Load = 10
	if _, err := PrepareReplay(synthTrace(), cfg); err == nil || !strings.Contains(err.Error(), "out of reach") {
		t.Fatalf("err = %v, want the load named out of reach", err)
	}
}

func TestReplayConfigValidate(t *testing.T) {
	cases := map[string]func(*ReplayConfig){
		"load":     func(c *ReplayConfig) { c.Load = 0 },
		"compress": func(c *ReplayConfig) { c.Compress = 0.5 },
		"nodes":    func(c *ReplayConfig) { c.Nodes = 1.5 },
		"samples":  func(c *ReplayConfig) { c.Samples = 0 },
		"queue":    func(c *ReplayConfig) { c.Queues = []string{"lifo"} },
		"policies": func(c *ReplayConfig) { c.Policies = nil },
	}
	for name, mutate := range cases {
		cfg := DefaultReplayConfig()
		mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), name[:4]) {
			t.Errorf("%s: err = %v, want one naming it", name, err)
		}
	}
	if _, err := Replay(synthTrace(), ReplayConfig{Load: 1, Nodes: 1, Samples: 1, Queues: QueueNames, Policies: []string{"worst-fit"}}); err == nil {
		t.Error("an unknown policy replayed")
	}
}

func TestCutNodesKeepsEveryKind(t *testing.T) {
	var nodes []NodeSpec
	for i := range 20 {
		nodes = append(nodes, NodeSpec{Name: "a", GPUs: 8, Model: "G2"}, NodeSpec{Name: "b", GPUs: 2, Model: "T4"})
		if i < 3 {
			nodes = append(nodes, NodeSpec{Name: "c", GPUs: 1, Model: "A10"})
		}
	}
	got := map[string]int{}
	for _, n := range CutNodes(nodes, 0.1) {
		got[n.Model]++
	}
	if got["G2"] != 2 || got["T4"] != 2 || got["A10"] != 1 {
		t.Fatalf("kept %v; want 2 G2, 2 T4, 1 A10", got)
	}
	if len(CutNodes(nodes, 1)) != len(nodes) {
		t.Fatal("a share of 1 dropped nodes")
	}
}

// replayInvariants is the replay's test hook: after every event no GPU, CPU or
// memory is over-allocated and the running jobs' demand is what is allocated.
func replayInvariants(t *testing.T) func(*sim) {
	return func(s *sim) {
		running := 0
		for _, e := range s.ends {
			running += s.in.Jobs[e.job].Shape.DemandMilli()
		}
		if free := s.c.TotalGPUs()*MilliGPU - s.c.FreeMilli(); free != s.alloc || running != s.alloc {
			t.Fatalf("at %g: allocated %d, cluster says %d, running jobs ask %d", s.now, s.alloc, free, running)
		}
		for _, n := range s.c.Nodes {
			if n.CPUFree < 0 || n.MemFree < 0 {
				t.Fatalf("at %g: node %s over-allocated: cpu %d mem %d free", s.now, n.Spec.Name, n.CPUFree, n.MemFree)
			}
			for _, g := range n.GPUFree {
				if g < 0 || g > MilliGPU {
					t.Fatalf("at %g: node %s has a GPU with %d milli free", s.now, n.Spec.Name, g)
				}
			}
		}
	}
}

// checkReplay runs every policy and queue on tr with the invariants checked,
// and checks the totals against the jobs' own starts.
func checkReplay(t *testing.T, tr Trace, cfg ReplayConfig) {
	in, err := PrepareReplay(tr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := WorkloadOf(tr.Tasks)
	for _, p := range cfg.Policies {
		for _, q := range cfg.Queues {
			r, err := replayOne(tr.Nodes, &in, w, p, q, cfg, replayInvariants(t))
			if err != nil {
				t.Fatalf("%s/%s: %v (every started job must end and leave the cluster whole)", p, q, err)
			}
			checkTotals(t, tr, &in, r)
		}
	}
}

func checkTotals(t *testing.T, tr Trace, in *ReplayInput, r ReplayRun) {
	t.Helper()
	used, never, multi := 0.0, 0, 0
	for i, j := range in.Jobs {
		st := r.Start[i]
		switch {
		case st < 0:
			never++
			if j.Shape.GPUs > 1 {
				multi++
			}
		case st < j.Arrive || st > in.Horizon:
			t.Fatalf("%s/%s: job %d arrived %g, started %g (horizon %g)", r.Policy, r.Queue, i, j.Arrive, st, in.Horizon)
		default:
			used += float64(j.Shape.DemandMilli()) * (min(st+j.Run, in.Horizon) - st)
		}
	}
	capMilli := float64(NewCluster(tr.Nodes).TotalGPUs() * MilliGPU)
	if u := used / (capMilli * in.Horizon); math.Abs(u-r.Utilisation) > 1e-9 || u > 1+1e-9 {
		t.Errorf("%s/%s: utilisation %g, the starts add up to %g", r.Policy, r.Queue, r.Utilisation, u)
	}
	if never != r.NeverStarted || multi != r.MultiNeverStarted || r.WaitP50 < 0 || r.WaitP50 > r.WaitP95 || r.WaitP95 > r.WaitMax || r.StrandedGPUHours < 0 {
		t.Errorf("%s/%s: %+v; counted %d never started (%d multi-GPU)", r.Policy, r.Queue, r, never, multi)
	}
}

func TestReplayPropertiesSynthetic(t *testing.T) {
	checkReplay(t, synthTrace(), synthConfig())
}

func TestReplayPropertiesTestdata(t *testing.T) {
	tr, err := LoadTrace("testdata", "pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	cfg := synthConfig()
	cfg.Compress, cfg.Load = 0, 0.5
	checkReplay(t, tr, cfg)
}

// TestReplayPropertiesRealSlice replays the real trace's first 1,500 tasks on
// a tenth of its nodes; skips when the trace is not beside the repository.
func TestReplayPropertiesRealSlice(t *testing.T) {
	tr, err := LoadTrace(realTraceDir(t), "pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	tr.Tasks, tr.Nodes = tr.Tasks[:1500], CutNodes(tr.Nodes, 0.1)
	cfg := DefaultReplayConfig()
	cfg.Policies, cfg.Load, cfg.Samples = []string{RandomFit, FGD, Gpupool}, 0.2, 200
	checkReplay(t, tr, cfg)
}

// TestReplayGolden is the synthetic replay's table, every policy and queue;
// the same run twice gives the same table.
func TestReplayGolden(t *testing.T) {
	res, err := Replay(synthTrace(), synthConfig())
	if err != nil {
		t.Fatal(err)
	}
	got := res.Caption("synthetic") + "\n\n" + res.Table()
	again, err := Replay(synthTrace(), synthConfig())
	if err != nil || again.Caption("synthetic")+"\n\n"+again.Table() != got {
		t.Fatalf("a second run differs (err %v)", err)
	}
	path := filepath.Join("testdata", "replay.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("table differs from %s (rerun with -update if intended):\n%s", path, got)
	}
}

// TestReplayCountsOldNeverStarted: a multi-GPU job never started counts among
// the old ones only when it arrived at least OldWait before the end.
func TestReplayCountsOldNeverStarted(t *testing.T) {
	const h = 4 * 3600.0
	in := &ReplayInput{Horizon: h, Jobs: []Job{
		{Shape: Shape{GPUs: 2, GPUMilli: MilliGPU}, Arrive: 0},            // never started, waited 4 h
		{Shape: Shape{GPUs: 2, GPUMilli: MilliGPU}, Arrive: h - OldWait},  // never started, waited exactly 1 h
		{Shape: Shape{GPUs: 4, GPUMilli: MilliGPU}, Arrive: h - 600},      // never started, arrived 10 min before the end
		{Shape: Shape{GPUs: 1, GPUMilli: MilliGPU}, Arrive: 0},            // one GPU: not multi
		{Shape: Shape{GPUs: 2, GPUMilli: MilliGPU}, Arrive: 60, Run: 600}, // started
	}}
	s := newSim(in, NewCluster(synthTrace().Nodes), nil, false, 0)
	s.start[4] = 120
	r := s.summary("p", "q")
	if r.Multi != 4 || r.MultiNeverStarted != 3 || r.MultiNeverStartedOld != 2 || r.NeverStarted != 4 {
		t.Fatalf("multi %d, never %d, old %d, all never %d; want 4, 3, 2, 4", r.Multi, r.MultiNeverStarted, r.MultiNeverStartedOld, r.NeverStarted)
	}
}

// TestReplayGPUOnly: with GPUOnly the tasks ask no CPU or memory, so one that
// asks more CPU than any node has starts, and the caption says so.
func TestReplayGPUOnly(t *testing.T) {
	tr := synthTrace()
	tr.Tasks[5].CPUMilli = 1 << 30
	cfg := synthConfig()
	cfg.Policies, cfg.Queues = []string{FGD}, []string{QueueFIFO}
	for _, gpuOnly := range []bool{false, true} {
		cfg.GPUOnly = gpuOnly
		res, err := Replay(tr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		k := slices.IndexFunc(res.Input.Jobs, func(j Job) bool { return j.Task == 5 })
		started := res.Runs[0].Start[k] >= 0
		ignored := strings.Contains(res.Caption("x"), "CPU and memory ignored")
		if started != gpuOnly || ignored != gpuOnly {
			t.Errorf("GPUOnly %v: the task too large for any node's CPU started %v, caption %q", gpuOnly, started, res.Caption("x"))
		}
		for _, j := range res.Input.Jobs {
			if gpuOnly && (j.Shape.CPUMilli != 0 || j.Shape.MemoryMiB != 0) {
				t.Fatalf("GPUOnly: job %+v asks CPU or memory", j)
			}
		}
	}
}
