package sim

import (
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// busiestNode returns the node with the most process rows after hours of running.
func busiestNode(b *testing.B, f *Fleet, at time.Time) *Node {
	var best *Node
	most := -1
	for _, n := range f.Nodes() {
		var batch schemas.SampleBatch
		if err := n.Sample(b.Context(), at, &batch); err != nil {
			b.Fatal(err)
		}
		if len(batch.Processes) > most && !n.MIG() {
			best, most = n, len(batch.Processes)
		}
	}
	return best
}

func BenchmarkNodeSample(b *testing.B) {
	cfg := testConfig(1)
	at := cfg.Start.Add(6 * time.Hour)
	tests := []struct {
		name string
		// procsPerGPU, when set, fills every GPU of the node with that many
		// processes of one job (the worst case: MPS or a multi-process server).
		procsPerGPU int
	}{
		{"busy node", 0},
		{"8 procs per GPU", 8},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			f, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			f.Advance(at)
			n := busiestNode(b, f, at)
			if tt.procsPerGPU > 0 {
				j := &job{kind: kindTraining, key: "k8s/bench/job", state: stateRunning, startMs: at.UnixMilli() - hours(1),
					prof: profile{gr: 0.95, sm: 0.8, occ: 0.4, tensor: 0.5, dram: 0.4, rxBytesPerS: 5e8, txBytesPerS: 1e8, jitter: 0.04}}
				for i := range n.slots {
					s := &n.slots[i]
					s.job, s.procs = j, s.procs[:0]
					for range tt.procsPerGPU {
						s.procs = append(s.procs, proc{pid: n.newPID(7), name: "python3", owner: j, memMiB: 1000})
					}
				}
			}
			var batch schemas.SampleBatch
			tick := cfg.Tick
			for b.Loop() {
				batch.Reset()
				at = at.Add(tick)
				if err := n.Sample(b.Context(), at, &batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch.Rows()), "rows/op")
		})
	}
}

// BenchmarkFleetDay is one simulated day of the default fleet: 8640 Advances and
// a Sample of every node after each.
func BenchmarkFleetDay(b *testing.B) {
	cfg := testConfig(1)
	rows := 0
	for b.Loop() {
		f, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		rows = 0
		var batch schemas.SampleBatch
		for i := 1; i <= 8640; i++ {
			at := cfg.Start.Add(time.Duration(i) * cfg.Tick)
			f.Advance(at)
			for _, n := range f.Nodes() {
				batch.Reset()
				if err := n.Sample(b.Context(), at, &batch); err != nil {
					b.Fatal(err)
				}
				rows += batch.Rows()
			}
		}
	}
	b.ReportMetric(float64(rows), "rows/day")
}
