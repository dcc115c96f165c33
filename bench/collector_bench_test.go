package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/attribution"
	"github.com/gpupool/gpupool/schemas"
)

const benchGPUs, benchProcs = 8, 64

// denseSource reports 8 GPUs × 64 processes, values drifting tick to tick, with no
// job keys (attribution fills them), as NVML or DCGM would.
type denseSource struct {
	rng  *rand.Rand
	util []float32
}

func newDenseSource() *denseSource {
	return &denseSource{rng: rand.New(rand.NewPCG(5, 6)), util: make([]float32, benchGPUs*benchProcs)}
}

func (s *denseSource) Sample(_ context.Context, at time.Time, b *schemas.SampleBatch) error {
	ms := at.UnixMilli()
	for g := 0; g < benchGPUs; g++ {
		gs := schemas.NewGPUSample()
		gs.TimeMs, gs.GPUUUID, gs.GPUIndex = ms, gpuUUIDs[g], uint32(g)
		gs.Model, gs.Card, gs.FBTotalMiB, gs.FBUsedMiB = "NVIDIA H100 80GB HBM3", "H100-80GB", 81559, 60000
		gs.GPUUtil, gs.PowerW, gs.TempC, gs.EnergyMilliJ = 0.9, 500, 60, uint64(ms)
		b.GPUs = append(b.GPUs, gs)
		for p := 0; p < benchProcs; p++ {
			i := g*benchProcs + p
			s.util[i] = min(max(s.util[i]+(s.rng.Float32()-0.5)*0.05, 0), 1)
			b.Processes = append(b.Processes, schemas.ProcessSample{
				TimeMs: ms, GPUUUID: gs.GPUUUID, PID: uint32(2000 + i), ProcessName: "python3",
				FBUsedMiB: 900, SMUtil: s.util[i], MemUtil: s.util[i] / 2,
			})
		}
	}
	return nil
}

var gpuUUIDs = func() []string {
	out := make([]string, benchGPUs)
	for i := range out {
		out[i] = fmt.Sprintf("GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i)
	}
	return out
}()

// procTree writes a /proc fixture with one Kubernetes container process per PID.
func procTree(b *testing.B) string {
	root := filepath.Join(b.TempDir(), "proc")
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.MkdirAll(root, 0o755))
	must(os.WriteFile(filepath.Join(root, "stat"), []byte("cpu  1 2 3 4\nbtime 1796000000\n"), 0o644))
	for i := 0; i < benchGPUs*benchProcs; i++ {
		pid := 2000 + i
		dir := filepath.Join(root, fmt.Sprint(pid))
		must(os.MkdirAll(dir, 0o755))
		pod := fmt.Sprintf("8d2f3e1a_7b4c_4e5f_9a0b_%012d", i/8)
		cg := fmt.Sprintf("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%064d.scope\n", pod, i)
		must(os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cg), 0o644))
		must(os.WriteFile(filepath.Join(dir, "environ"), []byte("PATH=/usr/bin\x00HOME=/root\x00"), 0o644))
		stat := fmt.Sprintf("%d (python3) S 1 %d %d 0 -1 4194560 1 0 0 0 1 1 0 0 20 0 1 0 %d 1 1 0", pid, pid, pid, 5000+i)
		must(os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
		must(os.WriteFile(filepath.Join(dir, "comm"), []byte("python3\n"), 0o644))
	}
	return root
}

// discard acknowledges every publish at once: the collector's own cost, without a
// server's.
type discard struct{}

func (discard) PublishMsg(context.Context, *nats.Msg, ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return &jetstream.PubAck{}, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tickClock is the simulated time of the tick being collected: attribution's cache
// ages by it, as it would at one tick per second.
var tickClock time.Time

func newBenchCollector(b *testing.B, pub collector.Publisher, attributed bool) *collector.Collector {
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Node = "bench", "gpu-node-1"
	var opts []collector.Option
	if attributed {
		acfg := attribution.DefaultConfig()
		acfg.ProcRoot, acfg.Cluster, acfg.Node = procTree(b), "bench", "gpu-node-1"
		a, err := attribution.New(acfg, attribution.WithClock(func() time.Time { return tickClock }))
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, collector.WithAttributor(a))
	}
	c, err := collector.New(cfg, newDenseSource(), pub, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCollectorTick measures CPU and allocations per tick for a node with
// 8 GPUs × 64 processes: the full tick (sample, attribute, encode, publish) against
// the sample alone, in the same run.
func BenchmarkCollectorTick(b *testing.B) {
	at := time.Now()
	run := func(b *testing.B, tick func(int) error) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		i := 0
		for b.Loop() {
			if err := tick(i); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perTick := (cpuTime() - cpu0) / time.Duration(i)
		b.ReportMetric(float64(perTick.Microseconds()), "cpu_µs/tick")
		b.ReportMetric(100*perTick.Seconds(), "%core_at_1Hz")
	}
	b.Run("sample-only", func(b *testing.B) {
		src := newDenseSource()
		var batch schemas.SampleBatch
		run(b, func(i int) error {
			batch.Reset()
			return src.Sample(context.Background(), at.Add(time.Duration(i)*time.Second), &batch)
		})
	})
	b.Run("attribute-encode-publish", func(b *testing.B) {
		c := newBenchCollector(b, discard{}, true)
		run(b, func(i int) error {
			tickClock = at.Add(time.Duration(i) * time.Second)
			return c.Collect(context.Background(), tickClock)
		})
	})
	b.Run("attribute-encode-publish-to-nats", func(b *testing.B) {
		bt := bustest.Start(b)
		c := newBenchCollector(b, bt.JS, true)
		run(b, func(i int) error {
			tickClock = at.Add(time.Duration(i) * time.Second)
			return c.Collect(context.Background(), tickClock)
		})
	})
}

// BenchmarkCollectorHeap10k runs 10,000 full ticks and reports the heap in use
// before and after (after a GC): memory must stay flat.
func BenchmarkCollectorHeap10k(b *testing.B) {
	for b.Loop() {
		c := newBenchCollector(b, discard{}, true)
		at := time.Now()
		heap := func() float64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return float64(m.HeapInuse) / (1 << 20)
		}
		for i := 0; i < 100; i++ { // warm caches and buffers
			tickClock = at.Add(time.Duration(i) * time.Second)
			if err := c.Collect(context.Background(), tickClock); err != nil {
				b.Fatal(err)
			}
		}
		before := heap()
		for i := 100; i < 10_100; i++ {
			tickClock = at.Add(time.Duration(i) * time.Second)
			if err := c.Collect(context.Background(), tickClock); err != nil {
				b.Fatal(err)
			}
		}
		after := heap()
		b.ReportMetric(before, "heap_MiB_after_100")
		b.ReportMetric(after, "heap_MiB_after_10k")
		b.Logf("heap in use: %.2f MiB after 100 ticks, %.2f MiB after 10,100 ticks", before, after)
	}
}
