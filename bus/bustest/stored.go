package bustest

import (
	"testing"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
)

// Stored is what the samples and jobs streams hold, decoded.
type Stored struct {
	SampleBatches, GPURows, ProcessRows uint64
	JobBatches, JobEvents               uint64
}

// Stored decodes every message of the samples and jobs streams (for the small
// streams of a test: it reads them one message at a time).
func (b *Bus) Stored(t testing.TB) Stored {
	t.Helper()
	var s Stored
	dec := schemas.NewDecoder()
	var batch schemas.SampleBatch
	b.each(t, bus.StreamSamples, func(data []byte) {
		if err := dec.Decode(data, &batch); err != nil {
			t.Fatalf("bustest: decode sample batch: %v", err)
		}
		s.SampleBatches++
		s.GPURows += uint64(len(batch.GPUs))
		s.ProcessRows += uint64(len(batch.Processes))
	})
	b.each(t, bus.StreamJobs, func(data []byte) {
		jb, err := schemas.DecodeJobEvents(data)
		if err != nil {
			t.Fatalf("bustest: decode job events: %v", err)
		}
		s.JobBatches++
		s.JobEvents += uint64(len(jb.Events))
	})
	return s
}

// EachSampleBatch decodes every message of the samples stream, in order, and
// calls fn with it (the batch is reused between calls).
func (b *Bus) EachSampleBatch(t testing.TB, fn func(*schemas.SampleBatch)) {
	t.Helper()
	dec := schemas.NewDecoder()
	var batch schemas.SampleBatch
	b.each(t, bus.StreamSamples, func(data []byte) {
		if err := dec.Decode(data, &batch); err != nil {
			t.Fatalf("bustest: decode sample batch: %v", err)
		}
		fn(&batch)
	})
}

func (b *Bus) each(t testing.TB, stream string, fn func(data []byte)) {
	t.Helper()
	st, err := b.JS.Stream(t.Context(), stream)
	if err != nil {
		t.Fatalf("bustest: %s: %v", stream, err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatalf("bustest: %s: %v", stream, err)
	}
	if info.State.Msgs == 0 {
		return
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatalf("bustest: %s message %d: %v", stream, seq, err)
		}
		fn(m.Data)
	}
}
