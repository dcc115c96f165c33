package enginereplay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/scheduler/placement/frag"
)

// invariants is the replay's test hook: after every event, what the engine's
// state holds is checked against the jobs and the nodes, without the
// placement package's own bookkeeping: no whole GPU is given twice or also
// shared, the fractions on a GPU sum to at most one GPU, a job runs on one
// node with exactly the GPUs (or the fraction) it asks, on a model it allows,
// and the jobs the state holds are the GPU jobs running.
func invariants(t *testing.T, nodes []frag.NodeSpec) func(*runner) {
	model := map[string]string{}
	size := map[string]int{}
	for _, n := range nodes {
		model[n.Name], size[n.Name] = n.Model, n.GPUs
	}
	return func(r *runner) {
		type gpu struct {
			node string
			i    int
		}
		whole := map[gpu]string{}
		shared := map[gpu]int{}
		running := 0
		for _, id := range r.st.Jobs() {
			i, err := strconv.Atoi(id)
			if err != nil {
				t.Fatalf("at %g: the state holds job %q", r.now, id)
			}
			sh := r.in.Jobs[i].Shape
			if r.start[i] < 0 || r.start[i]+r.in.Jobs[i].Run < r.now {
				t.Fatalf("at %g: job %d is placed but started at %g and runs %g", r.now, i, r.start[i], r.in.Jobs[i].Run)
			}
			running++
			pl, _ := r.st.Placed(id)
			na := pl.Nodes()
			if len(na) != 1 {
				t.Fatalf("at %g: job %d (%+v) placed on %d nodes: %s", r.now, i, sh, len(na), pl)
			}
			a := na[0]
			if !sh.Allows(model[a.Node]) {
				t.Fatalf("at %g: job %d allows %q, placed on %s, a %s", r.now, i, sh.Models, a.Node, model[a.Node])
			}
			if sh.Fraction() {
				if len(a.GPUs) != 0 || len(a.Shares) != 1 || a.Shares[0].Fraction != sh.GPUMilli {
					t.Fatalf("at %g: job %d asks %d/1000 of a GPU, holds %+v", r.now, i, sh.GPUMilli, a)
				}
				g := gpu{a.Node, a.Shares[0].GPU}
				shared[g] += sh.GPUMilli
				if shared[g] > frag.MilliGPU {
					t.Fatalf("at %g: GPU %v shared beyond one GPU: %d/1000", r.now, g, shared[g])
				}
				continue
			}
			if len(a.GPUs) != sh.GPUs || len(a.Shares) != 0 {
				t.Fatalf("at %g: job %d asks %d whole GPUs, holds %+v", r.now, i, sh.GPUs, a)
			}
			for _, k := range a.GPUs {
				g := gpu{a.Node, k}
				if k < 0 || k >= size[a.Node] {
					t.Fatalf("at %g: job %d holds GPU %d of %s, which has %d", r.now, i, k, a.Node, size[a.Node])
				}
				if other, taken := whole[g]; taken {
					t.Fatalf("at %g: GPU %v given to jobs %s and %s", r.now, g, other, id)
				}
				whole[g] = id
			}
		}
		for g := range shared {
			if id, taken := whole[g]; taken {
				t.Fatalf("at %g: GPU %v shared and held whole by job %s", r.now, g, id)
			}
		}
		want := 0
		for _, e := range r.ends {
			if r.in.Jobs[e.job].Shape.GPUs > 0 {
				want++
			}
		}
		if running != want {
			t.Fatalf("at %g: the state holds %d jobs, %d GPU jobs run", r.now, running, want)
		}
	}
}

// checkRow checks a row against the jobs' own starts: every start inside the
// window and after its arrival, the counts and the utilisation.
func checkRow(t *testing.T, nodes []frag.NodeSpec, in *frag.ReplayInput, r frag.ReplayRun) {
	t.Helper()
	used, never, multi := 0.0, 0, 0
	for i, j := range in.Jobs {
		switch st := r.Start[i]; {
		case st < 0:
			never++
			if j.Shape.GPUs > 1 {
				multi++
			}
		case st < j.Arrive || st > in.Horizon:
			t.Fatalf("job %d arrived %g, started %g (horizon %g)", i, j.Arrive, st, in.Horizon)
		default:
			used += float64(j.Shape.DemandMilli()) * (min(st+j.Run, in.Horizon) - st)
		}
	}
	capMilli := float64(frag.NewCluster(nodes).TotalGPUs() * frag.MilliGPU)
	if u := used / (capMilli * in.Horizon); math.Abs(u-r.Utilisation) > 1e-9 || u > 1+1e-9 {
		t.Errorf("utilisation %g, the starts add up to %g", r.Utilisation, u)
	}
	if never != r.NeverStarted || multi != r.MultiNeverStarted || r.WaitP50 > r.WaitP95 || r.WaitP95 > r.WaitMax || r.StrandedGPUHours < 0 {
		t.Errorf("%+v; counted %d never started (%d multi-GPU)", r, never, multi)
	}
}

// randomTrace is a small cluster of a few models and sizes and tasks of every
// kind the trace has: CPU only, fractions, whole GPUs, gangs of 2–8 on one
// node, some bound to models (one the cluster lacks), arriving close enough
// to queue.
func randomTrace(seed uint64) frag.Trace {
	rng := rand.New(rand.NewPCG(seed, 44))
	models := []string{"G2", "T4", "V100M16"}
	var tr frag.Trace
	for i := range 2 + rng.IntN(5) {
		tr.Nodes = append(tr.Nodes, frag.NodeSpec{Name: fmt.Sprintf("n%d", i), CPUMilli: 64000, MemoryMiB: 262144,
			GPUs: []int{1, 2, 4, 8}[rng.IntN(4)], Model: models[rng.IntN(len(models))]})
	}
	at := int64(0)
	for range 20 + rng.IntN(60) {
		tk := frag.Task{Name: "t", CPUMilli: rng.Int64N(16000), MemoryMiB: rng.Int64N(65536), Created: at}
		switch r := rng.IntN(10); {
		case r < 1:
		case r < 5:
			tk.GPUs, tk.GPUMilli = 1, 50*(1+rng.IntN(19))
		case r < 8:
			tk.GPUs, tk.GPUMilli = 1, frag.MilliGPU
		default:
			tk.GPUs, tk.GPUMilli = []int{2, 4, 8}[rng.IntN(3)], frag.MilliGPU
		}
		if tk.GPUs > 0 && rng.IntN(4) == 0 {
			tk.Models = []string{models[rng.IntN(len(models))], "A10"}[:1+rng.IntN(2)]
		}
		tk.Scheduled, tk.Deleted = at, at+rng.Int64N(4000)
		tr.Tasks = append(tr.Tasks, tk)
		at += rng.Int64N(300)
	}
	return tr
}

func testReplayConfig() frag.ReplayConfig {
	rc := frag.DefaultReplayConfig()
	rc.Compress, rc.Nodes, rc.Samples = 1, 1, 100
	return rc
}

// TestRunProperties replays random small traces under both card orders with
// the invariants checked after every event.
func TestRunProperties(t *testing.T) {
	waited, multi := 0, 0
	for seed := range uint64(200) {
		tr := randomTrace(seed)
		in, err := frag.PrepareReplay(tr, testReplayConfig())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, order := range CardOrders {
			cfg := DefaultConfig()
			cfg.CardOrder, cfg.Samples = order, 100
			row, err := run(tr.Nodes, &in, cfg, invariants(t, tr.Nodes))
			if err != nil {
				t.Fatalf("seed %d, %s: %v", seed, order, err)
			}
			checkRow(t, tr.Nodes, &in, row)
			for i, j := range in.Jobs {
				if row.Start[i] > j.Arrive {
					waited++
					if j.Shape.GPUs > 1 {
						multi++
					}
				}
			}
		}
	}
	if waited == 0 || multi == 0 {
		t.Fatalf("%d jobs waited, %d of them multi-GPU: the random traces do not queue", waited, multi)
	}
}

// TestRunStartsWhatFits: on an empty cluster a gang of 8 starts at once on
// the 8-GPU node, two fractions that fit one GPU share it, and a job that
// fits no node (a model the cluster lacks) never starts.
func TestRunStartsWhatFits(t *testing.T) {
	nodes := []frag.NodeSpec{{Name: "t4", GPUs: 2, Model: "T4"}, {Name: "g2", GPUs: 8, Model: "G2"}}
	in := &frag.ReplayInput{Horizon: 1000, Jobs: []frag.Job{
		{Shape: frag.Shape{GPUs: 8, GPUMilli: 1000}, Arrive: 0, Run: 500},
		{Shape: frag.Shape{GPUs: 1, GPUMilli: 600}, Arrive: 10, Run: 100},
		{Shape: frag.Shape{GPUs: 1, GPUMilli: 400}, Arrive: 20, Run: 100},
		{Shape: frag.Shape{GPUs: 1, GPUMilli: 1000, Models: "A10"}, Arrive: 30, Run: 100},
		{Shape: frag.Shape{CPUMilli: 1000}, Arrive: 40, Run: 100},
		{Shape: frag.Shape{GPUs: 8, GPUMilli: 1000}, Arrive: 50, Run: 100},
	}}
	cfg := DefaultConfig()
	var shares []placement.SharedGPU
	row, err := run(nodes, in, cfg, func(r *runner) {
		if r.now == 20 {
			shares = r.st.Shared()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 10, 20, -1, 40, 500}
	for i, w := range want {
		if row.Start[i] != w {
			t.Errorf("job %d started at %g, want %g", i, row.Start[i], w)
		}
	}
	if len(shares) != 1 || shares[0].Used != 1000 || shares[0].Jobs != 2 {
		t.Errorf("shared GPUs at 20: %+v, want one holding both fractions", shares)
	}
	if row.NeverStarted != 1 || row.MultiNeverStarted != 0 || row.Multi != 2 {
		t.Errorf("row %+v, want 1 never started, no multi-GPU one", row)
	}
}

// TestRunTestdata replays the small copy of the trace in frag's testdata,
// both task files, with the invariants checked.
func TestRunTestdata(t *testing.T) {
	for _, f := range []struct {
		name string
		load float64
	}{{"pods.csv", 0.5}, {"pods_gpushare40.csv", 0.04}} {
		t.Run(f.name, func(t *testing.T) {
			tr, err := frag.LoadTrace(filepath.Join("..", "testdata"), f.name)
			if err != nil {
				t.Fatal(err)
			}
			rc := testReplayConfig()
			rc.Compress, rc.Load = 0, f.load
			res, err := Replay(tr, rc, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			row := res.Runs[len(res.Runs)-1]
			if row.Policy != Policy || row.Queue != Queue || len(res.Runs) != len(rc.Policies)*len(rc.Queues)+1 {
				t.Fatalf("rows %d, the last %s | %s; want frag's and the engine's", len(res.Runs), row.Policy, row.Queue)
			}
			checkRow(t, tr.Nodes, &res.Input, row)
			if _, err := run(tr.Nodes, &res.Input, DefaultConfig(), invariants(t, tr.Nodes)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRunRealSlice replays the real trace's first 1,500 tasks on a tenth of
// its nodes with the invariants checked; skips when the trace is not beside
// the repository.
func TestRunRealSlice(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "..", "shared", "data", "alibaba-gpu-2023")
	if _, err := os.Stat(filepath.Join(dir, "nodes.csv")); err != nil {
		t.Skipf("no real trace beside the repository (%v); the other tests use testdata", err)
	}
	tr, err := frag.LoadTrace(dir, "pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	tr.Tasks, tr.Nodes = tr.Tasks[:1500], frag.CutNodes(tr.Nodes, 0.1)
	rc := frag.DefaultReplayConfig()
	rc.Load, rc.Samples = 0.2, 200
	in, err := frag.PrepareReplay(tr, rc)
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range CardOrders {
		cfg := DefaultConfig()
		cfg.CardOrder, cfg.Samples = order, rc.Samples
		row, err := run(tr.Nodes, &in, cfg, invariants(t, tr.Nodes))
		if err != nil {
			t.Fatalf("%s: %v", order, err)
		}
		checkRow(t, tr.Nodes, &in, row)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := map[string]func(*Config){
		"plan":       func(c *Config) { c.Plan.Policy = "lifo" },
		"sharing":    func(c *Config) { c.Sharing = "none" },
		"card order": func(c *Config) { c.CardOrder = "" },
		"samples":    func(c *Config) { c.Samples = 0 },
	}
	for name, mutate := range cases {
		cfg := DefaultConfig()
		mutate(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want one naming it", name, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
}
