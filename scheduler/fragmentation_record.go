package scheduler

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// DefaultFragmentationEvery is how often the scheduler writes its
// fragmentation figure by default (Config.FragmentationEvery).
const DefaultFragmentationEvery = time.Minute

// maxFragmentationSpacing is the longest FragmentationEvery: the
// fragmentation_hourly view counts a sample for at most 15 minutes, so that a
// scheduler that stopped does not stretch its last figure; samples 10 minutes
// apart, plus a pass's delay, stay under it.
const maxFragmentationSpacing = 10 * time.Minute

// maxPendingFragmentation bounds the samples kept while the recorder fails;
// past it new samples are dropped (and logged) until it succeeds again.
const maxPendingFragmentation = 20_000

// FragmentationSample is the fragmentation figure of one cluster and card type
// at one time: a row of the store's scheduler_fragmentation table.
type FragmentationSample struct {
	Time time.Time `json:"time"`
	placement.Fragmentation
}

// FragmentationRecorder is a Recorder that also keeps the fragmentation figure
// over time. The scheduler writes samples only to a recorder that is one.
type FragmentationRecorder interface {
	// RecordFragmentation appends samples; recording the same samples again
	// changes nothing.
	RecordFragmentation(ctx context.Context, samples []FragmentationSample) error
}

// fragSampler is the samples taken and not yet recorded (guarded by
// Service.auditMu) and when the last was taken (guarded by Service.passMu).
type fragSampler struct {
	pending []FragmentationSample
	last    time.Time
}

// sampleFragmentation takes the fragmentation figure when FragmentationEvery
// has passed since the last sample and the scheduler places jobs, and hands it
// to the recorder in the background (kickRecord): a pass never waits for the
// store. Call with passMu held.
func (s *Service) sampleFragmentation(ctx context.Context, now time.Time) {
	every := s.cfg.FragmentationEvery
	if _, ok := s.rec.(FragmentationRecorder); !ok || every <= 0 {
		return
	}
	if !s.frag.last.IsZero() && now.Sub(s.frag.last) < every {
		return
	}
	figure := s.Fragmentation()
	if len(figure) == 0 {
		return
	}
	s.frag.last = now
	s.auditMu.Lock()
	if len(s.frag.pending)+len(figure) > maxPendingFragmentation {
		s.auditMu.Unlock()
		s.log.Warn("fragmentation sample dropped: the recorder has failed for too long", "pending", maxPendingFragmentation)
		return
	}
	for _, f := range figure {
		s.frag.pending = append(s.frag.pending, FragmentationSample{Time: now.UTC().Truncate(time.Millisecond), Fragmentation: f})
	}
	s.auditMu.Unlock()
	s.kickRecord(ctx)
}

// recordFragmentation hands the pending samples to the recorder; on failure
// they stay for the next try, and the failure is counted as an audit
// recorder's failure is. Called by the one recording goroutine (kickRecord).
func (s *Service) recordFragmentation(ctx context.Context) {
	fr, ok := s.rec.(FragmentationRecorder)
	if !ok {
		return
	}
	s.auditMu.Lock()
	samples := s.frag.pending
	s.auditMu.Unlock()
	if len(samples) == 0 {
		return
	}
	if err := fr.RecordFragmentation(ctx, samples); err != nil {
		s.countRecordErr()
		s.log.Warn("record the fragmentation figure; the samples are recorded again later", "samples", len(samples), "err", err)
		return
	}
	s.auditMu.Lock()
	// Samples taken meanwhile stay; those just recorded go.
	s.frag.pending = s.frag.pending[len(samples):]
	s.auditMu.Unlock()
}

var _ FragmentationRecorder = (*MemoryRecorder)(nil)

// RecordFragmentation appends samples not recorded before (one per time,
// cluster and card).
func (m *MemoryRecorder) RecordFragmentation(_ context.Context, samples []FragmentationSample) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fragSeen == nil {
		m.fragSeen = map[fragKey]bool{}
	}
	for _, x := range samples {
		k := fragKey{x.Time.UnixMilli(), x.Cluster, x.Card}
		if !m.fragSeen[k] {
			m.fragSeen[k] = true
			m.frag = append(m.frag, x)
		}
	}
	return nil
}

// fragKey identifies a sample, as the table's sorting key does.
type fragKey struct {
	ms            int64
	cluster, card string
}

// FragmentationSamples returns the samples recorded, in the order recorded.
func (m *MemoryRecorder) FragmentationSamples() []FragmentationSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]FragmentationSample(nil), m.frag...)
}
