package dcgm

import (
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// BenchmarkMap8GPUs maps one tick of recorded values of an 8-GPU H100 node to
// GPUSamples (no engine calls).
func BenchmarkMap8GPUs(b *testing.B) {
	ts := newTestSource(b, "h100", DefaultConfig())
	if err := ts.read(); err != nil {
		b.Fatal(err)
	}
	at := ts.eng.fx.SampledAt.UnixMicro()
	out := make([]schemas.GPUSample, len(ts.units))
	var st columnStates
	b.ReportAllocs()
	for b.Loop() {
		for i := range ts.units {
			u := &ts.units[i]
			out[i] = schemas.NewGPUSample()
			ts.mapper.mapUnit(u, &ts.table[u.selfSlot], nil, at, &out[i], &st)
			ts.publishStates(u, &st)
		}
	}
}

// BenchmarkSample8GPUs is a whole tick of an 8-GPU node through the fake engine:
// reading the watches, mapping, XID and health checks, and 4 processes.
func BenchmarkSample8GPUs(b *testing.B) {
	ts := newTestSource(b, "h100", DefaultConfig())
	at := ts.eng.fx.SampledAt
	var batch schemas.SampleBatch
	b.ReportAllocs()
	for b.Loop() {
		batch.Reset()
		if err := ts.Sample(b.Context(), at, &batch); err != nil {
			b.Fatal(err)
		}
	}
}
