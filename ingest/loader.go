package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Loader writes batches straight into the store with ingest's own table code, no bus
// in between: for loading a trace or a simulation into a fresh store as fast as
// possible (gpupool analyze --trace, the analyzer's scoring harness). It gives no
// exactly-once guarantee: a failed Flush leaves the batch to the caller.
type Loader struct {
	sink      Sink
	samples   *sampleSink
	jobs      *jobSink
	enc       *schemas.Encoder
	buf       []byte
	batchRows int
	rows      int
	loaded    uint64
	// recent is the content keys of the rows flushed (dedup.go).
	recent *recentKeys
}

// NewLoader returns a loader that flushes every batchRows rows (and on Flush).
func NewLoader(sink Sink, batchRows int) *Loader {
	if batchRows < 1 {
		batchRows = DefaultConfig().BatchRows
	}
	// A loaded trace may lie anywhere in time: no future-skew check. It comes from
	// a file the operator names, not from a credential of the bus: no node
	// restriction.
	// Rows repeated in the trace are loaded once, as ingest stores them once
	// (dedup.go): within DefaultConfig().DedupRows rows of each other.
	recent := newRecentKeys(DefaultConfig().DedupRows)
	return &Loader{sink: sink, samples: newSampleSink(sinkOptions{recent: recent, rowLevel: true}, false),
		jobs: newJobSink(sinkOptions{maxSkew: 100 * 365 * 24 * time.Hour, recent: recent, rowLevel: true}, nil),
		enc:  schemas.NewEncoder(), batchRows: batchRows, recent: recent}
}

// AddSamples validates and buffers a sample batch; it returns an error naming what is
// wrong with a bad one, which is not loaded.
func (l *Loader) AddSamples(ctx context.Context, b *schemas.SampleBatch) error {
	var err error
	l.buf, err = l.enc.Encode(l.buf[:0], b)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	n, err := l.samples.add(ctx, "", l.buf, time.Now())
	if err != nil {
		return fmt.Errorf("load: %s/%s: %w", b.Cluster, b.Node, err)
	}
	l.rows += n
	return l.maybeFlush(ctx)
}

// AddJobs validates and buffers job events.
func (l *Loader) AddJobs(ctx context.Context, events []schemas.JobEvent) error {
	if len(events) == 0 {
		return nil
	}
	data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Events: events})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	n, err := l.jobs.add(ctx, "", data, time.Now())
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	l.rows += n
	return l.maybeFlush(ctx)
}

func (l *Loader) maybeFlush(ctx context.Context) error {
	if l.rows < l.batchRows {
		return nil
	}
	return l.Flush(ctx)
}

// Flush inserts everything buffered.
func (l *Loader) Flush(ctx context.Context) error {
	for _, sink := range []rowSink{l.samples, l.jobs} {
		for _, tb := range sink.blocks() {
			n := tb.block.Rows()
			if n == 0 {
				continue
			}
			if err := l.sink.Insert(ctx, tb.table, tb.block, ""); err != nil {
				return fmt.Errorf("load: insert %d rows into %s: %w", n, tb.table, err)
			}
			if !tb.rollup {
				l.loaded += uint64(n)
			}
		}
		sink.reset()
		l.recent.add(sink.dedupper().takeKeys())
	}
	l.rows = 0
	return nil
}

// Loaded returns the rows inserted so far.
func (l *Loader) Loaded() uint64 { return l.loaded }
