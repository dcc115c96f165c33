package replay

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
)

// nodeBatch is what a collector on node n would publish at tick k: two whole GPUs
// on node a, two MIG instances elsewhere, one process each, with some fields
// Missing.
func nodeBatch(n string, k int) *schemas.SampleBatch {
	ms := t0.UnixMilli() + int64(k)*1000
	b := &schemas.SampleBatch{Cluster: "c1", Node: n}
	for g := range 2 {
		s := schemas.NewGPUSample()
		s.TimeMs, s.Cluster, s.Node, s.GPUIndex = ms, "c1", n, uint32(g)
		s.GPUUUID = fmt.Sprintf("GPU-%s-%d", n, g)
		s.Model, s.FBTotalMiB, s.FBUsedMiB = "NVIDIA H100 80GB HBM3", 81559, uint32(1000*k+g)
		if n != "a" {
			s.GPUUUID, s.GPUIndex, s.MIGProfile, s.FBTotalMiB = fmt.Sprintf("MIG-%s-%d", n, g), 0, "3g.40gb", 40192
		}
		s.Card = trace.Card(s.Model, s.MIGProfile, s.GPUUUID, s.FBTotalMiB)
		s.SMActive, s.GPUUtil, s.PowerW, s.EnergyMilliJ = float32(k%10)/10, 0.25, 350.5, uint64(1e9+k)
		if g == 1 {
			s.SMActive = schemas.Missing
		}
		b.GPUs = append(b.GPUs, s)
		b.Processes = append(b.Processes, schemas.ProcessSample{
			TimeMs: ms, Cluster: "c1", Node: n, GPUUUID: s.GPUUUID, PID: uint32(100 + g), ProcessName: "python3",
			Job: "k8s/ns/" + n, FBUsedMiB: s.FBUsedMiB, SMUtil: 0.5, MemUtil: schemas.Missing,
		})
	}
	return b
}

func batchString(b *schemas.SampleBatch) string {
	s := fmt.Sprintf("%s/%s", b.Cluster, b.Node)
	for _, g := range b.GPUs {
		s += fmt.Sprintf("\n  %+v", g)
	}
	for _, p := range b.Processes {
		s += fmt.Sprintf("\n  %+v", p)
	}
	return s
}

// TestRecordReplay records the batches of three nodes' collectors, running
// concurrently, and replays them: every tick gives back the same batches.
func TestRecordReplay(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	const ticks = 20
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprint("gzip ", gz), func(t *testing.T) {
			var buf bytes.Buffer
			rec := NewRecorder(trace.NewWriter(&buf, gz))
			for k := range ticks {
				var wg sync.WaitGroup
				for _, n := range nodes {
					wg.Go(func() {
						if err := rec.RecordBatch(nodeBatch(n, k)); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Go(func() {
					if k%5 == 0 {
						ev := schemas.JobEvent{TimeMs: t0.UnixMilli() + int64(k)*1000, Job: fmt.Sprint("j", k), Event: schemas.EventSubmit, Cluster: "c1", Team: "t", GPUs: 1}
						if err := rec.RecordJobs([]schemas.JobEvent{ev}); err != nil {
							t.Error(err)
						}
					}
				})
				wg.Wait()
				if k == ticks/2 {
					if err := rec.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if err := rec.RecordBatch(nodeBatch("a", 0)); !errors.Is(err, ErrRecorderClosed) {
				t.Errorf("record after Close: %v", err)
			}

			p, err := New(trace.NewReader(&buf, trace.ReaderOptions{Strict: true}), DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			got, err := playAll(t, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != ticks {
				t.Fatalf("replayed %d ticks, want %d", len(got), ticks)
			}
			for k, tk := range got {
				if len(tk.Batches) != len(nodes) || (k%5 == 0) != (len(tk.Jobs) == 1) {
					t.Fatalf("tick %d: %d batches, %d jobs", k, len(tk.Batches), len(tk.Jobs))
				}
				for i, n := range nodes {
					if g, w := batchString(tk.Batches[i]), batchString(nodeBatch(n, k)); g != w {
						t.Errorf("tick %d node %s:\n got %s\nwant %s", k, n, g, w)
					}
				}
			}
		})
	}
}

func TestRecordInvalid(t *testing.T) {
	var buf bytes.Buffer
	rec := NewRecorder(trace.NewWriter(&buf, false))
	b := nodeBatch("a", 1)
	b.Processes[0].SMUtil = 7
	if err := rec.RecordBatch(b); !errors.Is(err, trace.ErrInvalidRecord) {
		t.Errorf("RecordBatch: %v, want ErrInvalidRecord", err)
	}
	evs := []schemas.JobEvent{{TimeMs: t0.UnixMilli(), Job: "j", Event: "bogus"}, {TimeMs: t0.UnixMilli(), Job: "j", Event: schemas.EventEnd}}
	if err := rec.RecordJobs(evs); !errors.Is(err, trace.ErrInvalidRecord) {
		t.Errorf("RecordJobs: %v, want ErrInvalidRecord", err)
	}
	rec.Close()
	r := trace.NewReader(&buf, trace.ReaderOptions{Strict: true})
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		n++
	}
	if n != 4 { // 2 GPUs + 1 valid process + 1 valid job event
		t.Errorf("recorded %d valid lines, want 4", n)
	}
}

// TestCreateRecorder records to a file (gzipped by its name), closes it and plays
// it back; a path in a missing folder is an error naming it.
func TestCreateRecorder(t *testing.T) {
	for _, name := range []string{"trace.jsonl", "trace.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			rec, err := CreateRecorder(path)
			if err != nil {
				t.Fatal(err)
			}
			for k := range 3 {
				if err := rec.RecordBatch(nodeBatch("a", k)); err != nil {
					t.Fatal(err)
				}
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := New(trace.NewReader(f, trace.ReaderOptions{Strict: true}), DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			got, err := playAll(t, p)
			if err != nil || len(got) != 3 {
				t.Fatalf("replayed %d ticks, err %v; want 3", len(got), err)
			}
		})
	}
	bad := filepath.Join(t.TempDir(), "missing", "trace.jsonl")
	if _, err := CreateRecorder(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("CreateRecorder(%s) = %v, want an error naming it", bad, err)
	}
}
