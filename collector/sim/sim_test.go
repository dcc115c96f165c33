package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

var testStart = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func testConfig(seed uint64) Config {
	cfg := DefaultConfig()
	cfg.Seed = seed
	cfg.Start = testStart
	return cfg
}

// series is what one GPU unit reported, tick by tick.
type series struct {
	gr, sm, dram []float32
	usedMiB      []uint32
	totalMiB     uint32
	card         string
}

// recording is a simulation run as a consumer saw it.
type recording struct {
	f      *Fleet
	ticks  int
	tickMs int64
	events []schemas.JobEvent
	units  map[string]*series
	rows   int
	// procs holds, per sampled tick index, "node/pid/job" of every zombie-looking
	// process row (no SM activity), for checking zombie truth.
	idleProcs map[string][]int
}

// simulate runs cfg for ticks ticks, sampling every node each tick and checking
// every batch as a collector's consumer would.
func simulate(t testing.TB, cfg Config, ticks int) *recording {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recording{f: f, ticks: ticks, tickMs: cfg.Tick.Milliseconds(), units: map[string]*series{}, idleProcs: map[string][]int{}}
	lastEnergy := map[string]uint64{}
	var b schemas.SampleBatch
	for i := 1; i <= ticks; i++ {
		at := cfg.Start.Add(time.Duration(i) * cfg.Tick)
		rec.events = append(rec.events, f.Advance(at)...)
		for _, n := range f.Nodes() {
			b.Reset()
			if err := n.Sample(t.Context(), at, &b); err != nil {
				t.Fatalf("sample %s: %v", n.Name(), err)
			}
			b.Cluster, b.Node = n.Cluster(), n.Name()
			if err := schemas.Validate(&b, at.UnixMilli(), 0); err != nil {
				t.Fatalf("tick %d node %s: %v", i, n.Name(), err)
			}
			if err := checkBatch(&b, lastEnergy); err != nil {
				t.Fatalf("tick %d node %s: %v", i, n.Name(), err)
			}
			rec.rows += b.Rows()
			for _, g := range b.GPUs {
				s := rec.units[g.GPUUUID]
				if s == nil {
					s = &series{totalMiB: g.FBTotalMiB, card: g.Card}
					rec.units[g.GPUUUID] = s
				}
				s.gr = append(s.gr, g.GrEngineActive)
				s.sm = append(s.sm, g.SMActive)
				s.dram = append(s.dram, g.DRAMActive)
				s.usedMiB = append(s.usedMiB, g.FBUsedMiB)
			}
			for _, p := range b.Processes {
				if p.SMUtil == 0 && p.FBUsedMiB > 0 {
					k := fmt.Sprintf("%s/%d/%s", n.Name(), p.PID, p.Job)
					rec.idleProcs[k] = append(rec.idleProcs[k], i)
				}
			}
		}
	}
	return rec
}

// checkBatch checks what Validate does not: energy counters never go back, a
// GPU's memory covers its processes', PIDs are unique, every process is on a GPU
// of the batch, and a GPU without processes is idle.
func checkBatch(b *schemas.SampleBatch, lastEnergy map[string]uint64) error {
	procMiB := map[string]uint32{}
	pids := map[uint32]bool{}
	for _, p := range b.Processes {
		procMiB[p.GPUUUID] += p.FBUsedMiB
		if pids[p.PID] {
			return fmt.Errorf("pid %d appears twice", p.PID)
		}
		pids[p.PID] = true
		if p.ProcessName == "" {
			return fmt.Errorf("pid %d has no name", p.PID)
		}
	}
	seen := map[string]bool{}
	for _, g := range b.GPUs {
		seen[g.GPUUUID] = true
		if e, ok := lastEnergy[g.GPUUUID]; ok && g.EnergyMilliJ < e {
			return fmt.Errorf("%s: energy went back from %d to %d mJ", g.GPUUUID, e, g.EnergyMilliJ)
		}
		lastEnergy[g.GPUUUID] = g.EnergyMilliJ
		if g.FBUsedMiB < procMiB[g.GPUUUID] {
			return fmt.Errorf("%s: fb_used %d MiB < its processes' %d MiB", g.GPUUUID, g.FBUsedMiB, procMiB[g.GPUUUID])
		}
		if _, busy := procMiB[g.GPUUUID]; !busy && (g.GrEngineActive != 0 || g.SMActive != 0 || g.FBUsedMiB > 500) {
			return fmt.Errorf("%s: no processes but gr=%v sm=%v fb_used=%d", g.GPUUUID, g.GrEngineActive, g.SMActive, g.FBUsedMiB)
		}
		if g.PowerW <= 0 || g.TempC < 20 || g.TempC > 95 {
			return fmt.Errorf("%s: power %v W, temperature %v °C", g.GPUUUID, g.PowerW, g.TempC)
		}
		if want := schemas.CardType(g.Model, 0); !strings.HasPrefix(g.Card, want) {
			return fmt.Errorf("%s: card %q does not match model %q", g.GPUUUID, g.Card, g.Model)
		}
	}
	for uuid := range procMiB {
		if !seen[uuid] {
			return fmt.Errorf("process on %s, which has no GPU row", uuid)
		}
	}
	return nil
}

func TestDeterminism(t *testing.T) {
	const ticks = 1500
	run := func(seed uint64) ([]schemas.JobEvent, []schemas.SampleBatch) {
		cfg := testConfig(seed)
		f, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var events []schemas.JobEvent
		var batches []schemas.SampleBatch
		for i := 1; i <= ticks; i++ {
			at := cfg.Start.Add(time.Duration(i) * cfg.Tick)
			events = append(events, f.Advance(at)...)
			if i%50 != 0 {
				continue
			}
			for _, n := range f.Nodes() {
				var b schemas.SampleBatch
				if err := n.Sample(t.Context(), at, &b); err != nil {
					t.Fatal(err)
				}
				batches = append(batches, b)
			}
		}
		return events, batches
	}
	e1, b1 := run(7)
	e2, b2 := run(7)
	e3, _ := run(8)
	if len(e1) == 0 {
		t.Fatal("no job events")
	}
	if fmt.Sprint(e1) != fmt.Sprint(e2) {
		t.Error("same seed, different job events")
	}
	if fmt.Sprint(b1) != fmt.Sprint(b2) {
		t.Error("same seed, different samples")
	}
	if fmt.Sprint(e1) == fmt.Sprint(e3) {
		t.Error("different seeds, same job events")
	}
}

// TestConcurrentSample samples nodes from goroutines, as the collector does, and
// expects exactly what sequential sampling of an identical fleet gives.
func TestConcurrentSample(t *testing.T) {
	cfg := testConfig(3)
	seq, _ := New(cfg)
	par, _ := New(cfg)
	for i := 1; i <= 360; i++ {
		at := cfg.Start.Add(time.Duration(i) * cfg.Tick)
		seq.Advance(at)
		par.Advance(at)
		want := make([]schemas.SampleBatch, len(seq.Nodes()))
		for k, n := range seq.Nodes() {
			if err := n.Sample(t.Context(), at, &want[k]); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]schemas.SampleBatch, len(par.Nodes()))
		done := make(chan error)
		for k, n := range par.Nodes() {
			go func() { done <- n.Sample(t.Context(), at, &got[k]) }()
		}
		for range par.Nodes() {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("tick %d: concurrent samples differ from sequential ones", i)
		}
	}
}

func TestSampleCancelled(t *testing.T) {
	f, _ := New(testConfig(1))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var b schemas.SampleBatch
	if err := f.Nodes()[0].Sample(ctx, testStart, &b); err == nil || b.Rows() != 0 {
		t.Fatalf("Sample with a cancelled context: err %v, %d rows", err, b.Rows())
	}
}

func TestAdvanceBackwards(t *testing.T) {
	f, _ := New(testConfig(1))
	if ev := f.Advance(testStart.Add(time.Hour)); len(ev) == 0 {
		t.Fatal("no events in the first hour")
	}
	if ev := f.Advance(testStart.Add(time.Minute)); ev != nil {
		t.Fatalf("Advance back in time returned %d events", len(ev))
	}
	if got := f.Stats().Now; !got.Equal(testStart.Add(time.Hour)) {
		t.Fatalf("Stats().Now = %v after going back", got)
	}
}

func TestShapes(t *testing.T) {
	tests := []struct {
		name                  string
		clusters, nodes, gpus int
		load                  float64
		wantUnits             int
		wantMIG               bool
	}{
		{"default", 2, 4, 8, 0.75, 112, true},
		{"one gpu", 1, 1, 1, 0.75, 1, false},
		{"mig only cluster", 2, 1, 2, 0.75, 2 + 8, true},
		{"many clusters", 30, 1, 4, 0.75, 0, true},
		{"big nodes", 1, 8, 16, 0.75, 0, true},
		{"no load", 1, 4, 8, 0, 56, true},
		{"overloaded", 1, 4, 4, 2, 28, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(11)
			cfg.Clusters, cfg.NodesPerCluster, cfg.GPUsPerNode, cfg.Load = tt.clusters, tt.nodes, tt.gpus, tt.load
			cfg.Tick = time.Minute
			rec := simulate(t, cfg, 6*60)
			if tt.wantUnits > 0 && rec.f.GPUCount() != tt.wantUnits {
				t.Errorf("GPUCount() = %d, want %d", rec.f.GPUCount(), tt.wantUnits)
			}
			if len(rec.units) != rec.f.GPUCount() {
				t.Errorf("sampled %d units, GPUCount() = %d", len(rec.units), rec.f.GPUCount())
			}
			mig := slices.ContainsFunc(rec.f.Nodes(), (*Node).MIG)
			if mig != tt.wantMIG {
				t.Errorf("MIG nodes present = %v, want %v", mig, tt.wantMIG)
			}
			names := map[string]bool{}
			for _, n := range rec.f.Nodes() {
				if names[n.Name()] {
					t.Errorf("node name %s repeats", n.Name())
				}
				names[n.Name()] = true
			}
			checkEvents(t, rec.events)
			if tt.load == 0 && len(rec.events) != 0 {
				t.Errorf("load 0 produced %d job events", len(rec.events))
			}
			if tt.load > 0 && len(rec.events) == 0 {
				t.Error("no job events")
			}
		})
	}
}

func TestMIGRows(t *testing.T) {
	cfg := testConfig(5)
	f, _ := New(cfg)
	at := cfg.Start.Add(2 * time.Hour)
	f.Advance(at)
	var migNodes int
	for _, n := range f.Nodes() {
		var b schemas.SampleBatch
		if err := n.Sample(t.Context(), at, &b); err != nil {
			t.Fatal(err)
		}
		if !n.MIG() {
			for _, g := range b.GPUs {
				if g.MIGProfile != "" || !strings.HasPrefix(g.GPUUUID, "GPU-") || g.FBTotalMiB < 40000 {
					t.Errorf("%s: whole GPU row %+v", n.Name(), g)
				}
			}
			continue
		}
		migNodes++
		if len(b.GPUs) <= cfg.GPUsPerNode {
			t.Errorf("%s: %d rows for %d MIG-enabled GPUs", n.Name(), len(b.GPUs), cfg.GPUsPerNode)
		}
		perGPU := map[uint32]uint32{}
		for _, g := range b.GPUs {
			if g.MIGProfile == "" || !strings.HasPrefix(g.GPUUUID, "MIG-") || g.Card != n.CardType() {
				t.Errorf("%s: MIG row %s profile %q card %q", n.Name(), g.GPUUUID, g.MIGProfile, g.Card)
			}
			perGPU[g.GPUIndex] += g.FBTotalMiB
		}
		for idx, mib := range perGPU {
			if mib > 81920 || mib < 30000 {
				t.Errorf("%s GPU %d: MIG instances add up to %d MiB", n.Name(), idx, mib)
			}
		}
	}
	if migNodes == 0 {
		t.Fatal("no MIG-enabled node in the default fleet")
	}
}

func TestUUIDs(t *testing.T) {
	f, _ := New(testConfig(9))
	seen := map[string]bool{}
	for _, n := range f.Nodes() {
		for _, u := range n.GPUUUIDs() {
			body := u[4:]
			if seen[u] || len(body) != 36 || body[8] != '-' || body[13] != '-' || body[18] != '-' || body[23] != '-' {
				t.Errorf("bad or repeated UUID %q", u)
			}
			seen[u] = true
		}
	}
	g, _ := New(testConfig(10))
	if g.Nodes()[0].GPUUUIDs()[0] == f.Nodes()[0].GPUUUIDs()[0] {
		t.Error("different seeds give the same GPU UUIDs")
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		i    int
		want string
	}{{0, "a"}, {1, "b"}, {25, "z"}, {26, "aa"}, {27, "ab"}, {26 + 26*26, "aaa"}}
	for _, tt := range tests {
		if got := clusterLetter(tt.i); got != tt.want {
			t.Errorf("clusterLetter(%d) = %q, want %q", tt.i, got, tt.want)
		}
	}
	if got := nodeName(0, 6); got != "gpu-a-007" {
		t.Errorf("nodeName(0, 6) = %q", got)
	}
	if got := clusterName(1); got != "eu-west-b" {
		t.Errorf("clusterName(1) = %q", got)
	}
}
