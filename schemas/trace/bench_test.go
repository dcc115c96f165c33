package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// benchTrace writes a fleet-like trace: nodes × 8 GPUs per tick, one process per
// GPU, every metric reported.
func benchTrace(b *testing.B, ticks, nodes int, gz bool) (data []byte, lines int) {
	var buf bytes.Buffer
	w := NewWriter(&buf, gz)
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC).UnixMilli()
	for tick := range ticks {
		for n := range nodes {
			for g := range 8 {
				f := float32((tick*7+n*3+g)%100) / 100
				s := schemas.GPUSample{
					TimeMs: t0 + int64(tick)*1000, Cluster: "us-east", Node: fmt.Sprintf("gpu-a-%03d", n),
					GPUUUID: fmt.Sprintf("GPU-1c2e7a40-5b6d-4e8f-9a0b-%06d%06d", n, g), GPUIndex: uint32(g),
					Model: "NVIDIA H100 80GB HBM3", FBTotalMiB: 81559, FBUsedMiB: uint32(f * 81559),
					GrEngineActive: f, SMActive: f * 0.9, SMOccupancy: f * 0.4, TensorActive: f * 0.3,
					DRAMActive: f * 0.5, GPUUtil: f, PCIeTxBytesPerS: f * 1.2e9, PCIeRxBytesPerS: f * 3e9,
					PowerW: 70 + f*600, EnergyMilliJ: 48213377612 + uint64(tick)*600000, TempC: 40 + f*30,
				}
				p := schemas.ProcessSample{
					TimeMs: s.TimeMs, Cluster: s.Cluster, Node: s.Node, GPUUUID: s.GPUUUID, PID: uint32(4000 + g),
					ProcessName: "python3", Job: fmt.Sprintf("k8s/nlp-chat/6f1d2c3b-7a8e-4f90-9b1c-%012d", n),
					FBUsedMiB: s.FBUsedMiB, SMUtil: s.SMActive, MemUtil: schemas.Missing,
				}
				if err := w.WriteGPU(&s); err != nil {
					b.Fatal(err)
				}
				if err := w.WriteProcess(&p); err != nil {
					b.Fatal(err)
				}
				lines += 2
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), lines
}

func BenchmarkReader(b *testing.B) {
	for _, gz := range []bool{false, true} {
		data, lines := benchTrace(b, 50, 25, gz)
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				r := NewReader(bytes.NewReader(data), ReaderOptions{Strict: true})
				for {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				n += lines
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkEncodingJSONBaseline decodes the same lines with encoding/json into a
// struct of pointers (the least an encoding/json reader would do, before any
// checks), to show what the hand-written scanner buys.
func BenchmarkEncodingJSONBaseline(b *testing.B) {
	data, lines := benchTrace(b, 50, 25, false)
	type row struct {
		Type, Ts, Cluster, Node, GPUUUID, Model, MIGProfile, ProcessName, Job *string
		GPUIndex, PID, XID                                                    *uint32
		FBTotal, FBUsed, Gr, SM, Occ, Tensor, DRAM, Util, Tx, Rx, Power, Temp *float64
		SMUtil, MemUtil                                                       *float64
		Energy                                                                *uint64
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var r row
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				b.Fatal(err)
			}
			if _, err := time.Parse(time.RFC3339, *r.Ts); err != nil {
				b.Fatal(err)
			}
		}
		n += lines
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

func BenchmarkWriter(b *testing.B) {
	data, lines := benchTrace(b, 10, 25, false)
	var recs []Record
	r := NewReader(bytes.NewReader(data), ReaderOptions{Strict: true})
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		recs = append(recs, rec)
	}
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) {
			n := 0
			for b.Loop() {
				w := NewWriter(io.Discard, gz)
				for _, rec := range recs {
					if err := w.WriteRecord(rec); err != nil {
						b.Fatal(err)
					}
				}
				w.Close()
				n += lines
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

const benchGPULine = `{"type":"gpu","ts":"2026-12-01T08:00:00Z","cluster":"us-east","node":"gpu-a-001","gpu_uuid":"GPU-1c2e7a40-5b6d-4e8f-9a0b-000000000001","gpu_index":0,"model":"NVIDIA H100 80GB HBM3","fb_total_mib":81559,"fb_used_mib":61235,"gr_engine_active":0.91,"sm_active":0.84,"sm_occupancy":0.41,"tensor_active":0.37,"dram_active":0.52,"gpu_util":0.99,"pcie_tx_bytes_per_s":1250000000,"pcie_rx_bytes_per_s":3100000000,"power_w":612.5,"energy_mj":48213377612,"temp_c":67}`

// BenchmarkDecodeGPULine is the decoder alone on one typical line.
func BenchmarkDecodeGPULine(b *testing.B) {
	d := newDecoder()
	line := []byte(benchGPULine)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, reason := d.decode(line); reason != "" {
			b.Fatal(reason)
		}
	}
}
