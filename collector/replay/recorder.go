package replay

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/secure/fileperm"
)

// Recorder writes what collectors saw to a trace. Several collectors may share one:
// its methods are safe for concurrent use, and each call's lines stay together.
type Recorder struct {
	mu     sync.Mutex
	w      *trace.Writer
	file   *os.File // the file CreateRecorder opened, closed with the writer
	closed bool
}

// NewRecorder returns a Recorder writing through w; Close closes w.
func NewRecorder(w *trace.Writer) *Recorder { return &Recorder{w: w} }

// CreateRecorder creates the trace file path (gzipped when it ends in .gz), 0600
// (it holds every sample and process of the node), and returns a Recorder
// writing to it; Close closes the file too.
func CreateRecorder(path string) (*Recorder, error) {
	f, err := fileperm.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, nil)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return &Recorder{w: trace.NewWriter(f, strings.HasSuffix(path, ".gz")), file: f}, nil
}

// RecordBatch writes a batch's rows. Rows the trace format rejects are left out
// and the rest written; the error (wrapping trace.ErrInvalidRecord) names the
// first and how many.
func (r *Recorder) RecordBatch(b *schemas.SampleBatch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRecorderClosed
	}
	if err := r.w.WriteBatch(b); err != nil {
		return fmt.Errorf("replay: record batch: %w", err)
	}
	return nil
}

// RecordJobs writes job events; like RecordBatch, an invalid event is left out and
// the others written.
func (r *Recorder) RecordJobs(events []schemas.JobEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRecorderClosed
	}
	var first error
	bad := 0
	for i := range events {
		err := r.w.WriteJob(&events[i])
		switch {
		case errors.Is(err, trace.ErrInvalidRecord):
			if first == nil {
				first = err
			}
			bad++
		case err != nil:
			return fmt.Errorf("replay: record jobs: %w", err)
		}
	}
	if first != nil {
		return fmt.Errorf("replay: record jobs: %w (%d of %d events left out)", first, bad, len(events))
	}
	return nil
}

// Flush pushes buffered lines to the file, so a trace being recorded can be read
// while it grows and survives a crash up to the last Flush.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRecorderClosed
	}
	return r.w.Flush()
}

// Close flushes and closes the trace writer, and the file if CreateRecorder opened
// it (a writer given to NewRecorder keeps its file). Closing twice is a no-op.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.w.Close()
	if r.file != nil {
		err = errors.Join(err, r.file.Close())
	}
	return err
}
