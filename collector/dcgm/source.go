package dcgm

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// Source samples a node's GPUs through DCGM. It is safe for concurrent use; one
// Source per process (go-dcgm's connection is process-wide).
type Source struct {
	cfg     Config
	eng     engine
	procs   ProcessLister
	log     *slog.Logger
	m       *Metrics
	onEvent func(Event)

	mu     sync.Mutex
	closed bool
	gpus   []gpuInfo
	units  []unit
	// watches are the running field watches; table holds each entity's latest
	// readings, at the index slot gives.
	watches []watchSet
	slot    map[entity]int
	table   []readings
	// names maps GPU, MIG instance and compute instance entities to the UUID of
	// their row; wholeByUUID maps a whole GPU's UUID to its DCGM ID.
	names       map[entity]string
	wholeByUUID map[string]uint32
	mapper      mapper
	states      columnStates
	xid         xidTracker
	health      healthTracker
	pidsOn      bool
	healthOn    bool
	pidCache    map[uint32][]pidStat
}

var _ collector.Source = (*Source)(nil)

// Option configures a Source.
type Option func(*options)

type options struct {
	log     *slog.Logger
	metrics *Metrics
	onEvent func(Event)
	now     func() time.Time
}

// WithLogger sets the source's logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithMetrics makes the source report to m (default: unregistered metrics).
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// WithEventHandler sets the function XID and health events are given to; see
// Event. Default: log them at Warn.
func WithEventHandler(h func(Event)) Option { return func(o *options) { o.onEvent = h } }

// WithClock sets the clock that dates the source's start: XIDs older than it are
// not reported. Default time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// New connects to DCGM as cfg says, finds the node's GPUs and MIG instances and
// starts watching their fields. procs lists GPU processes (nil: no process rows).
// Without libdcgm.so.4 it returns an error wrapping ErrNoLibrary and touches no
// other go-dcgm function.
func New(cfg Config, procs ProcessLister, opts ...Option) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("dcgm: config: %w", err)
	}
	if err := probeLibrary(); err != nil {
		return nil, err
	}
	eng, err := openGoDCGM(cfg)
	if err != nil {
		return nil, err
	}
	s, err := newSource(cfg, eng, procs, opts...)
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	return s, nil
}

// newSource builds a source on any engine; cfg must be valid.
func newSource(cfg Config, eng engine, procs ProcessLister, opts ...Option) (*Source, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	log := o.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "collector.dcgm")
	if o.metrics == nil {
		o.metrics = NewMetrics(nil)
	}
	s := &Source{
		cfg: cfg, eng: eng, procs: procs, log: log, m: o.metrics, onEvent: o.onEvent,
		slot: map[entity]int{}, names: map[entity]string{}, wholeByUUID: map[string]uint32{},
		mapper: mapper{staleMicros: cfg.MaxKeepAge.Microseconds()},
		xid:    newXIDTracker(o.now()), health: newHealthTracker(), pidCache: map[uint32][]pidStat{},
	}
	if s.onEvent == nil {
		s.onEvent = s.logEvent
	}
	requested, err := requestedSpecs(cfg.Fields)
	if err != nil {
		return nil, fmt.Errorf("dcgm: config: %w", err)
	}
	if err := s.setup(requested); err != nil {
		return nil, err
	}
	s.log.Info("DCGM source ready", "gpus", len(s.gpus), "rows", len(s.units), "watches", len(s.watches),
		"process_stats", s.pidsOn, "health", s.healthOn)
	return s, nil
}

// Sample appends one GPUSample per whole GPU or MIG instance, and the lister's
// processes, then hands the tick's events to the event handler.
func (s *Source) Sample(ctx context.Context, at time.Time, b *schemas.SampleBatch) error {
	events, err := s.sample(ctx, at, b)
	for _, e := range events {
		s.onEvent(e)
	}
	return err
}

func (s *Source) sample(ctx context.Context, at time.Time, b *schemas.SampleBatch) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.read(); err != nil {
		return nil, err
	}
	events := s.xidEvents()
	atMicros, atMs := at.UnixMicro(), at.UnixMilli()
	for i := range s.units {
		u := &s.units[i]
		g := schemas.NewGPUSample()
		g.TimeMs, g.GPUUUID, g.GPUIndex = atMs, u.UUID, u.Index
		g.Model, g.Card, g.MIGProfile, g.DriverVersion = u.Model, u.Card, u.MIGProfile, u.Driver
		var parent *readings
		if u.MIG {
			parent = &s.table[u.gpuSlot]
		}
		s.mapper.mapUnit(u, &s.table[u.selfSlot], parent, atMicros, &g, &s.states)
		if gi := s.gpuByID(u.GPU); gi != nil {
			g.XID = gi.xid
		}
		s.publishStates(u, &s.states)
		b.GPUs = append(b.GPUs, g)
	}
	if s.healthOn {
		events = append(events, s.healthEvents(at)...)
	}
	if s.procs != nil {
		s.sampleProcesses(ctx, at, b)
	}
	return events, nil
}

// read fetches the latest values of every watch. A failed watch leaves its
// entities' columns Missing for this tick; only when all fail is the tick an error.
func (s *Source) read() error {
	for i := range s.table {
		s.table[i].have = 0
	}
	var last error
	failed := 0
	for _, w := range s.watches {
		vals, err := s.eng.Latest(w.id)
		if err != nil {
			failed++
			last = err
			s.m.errors.WithLabelValues("latest").Inc()
			s.log.Warn("read DCGM field values failed", "entities", entityList(w.entities), "err", err)
			continue
		}
		for _, v := range vals {
			slot, ok := s.slot[v.Entity]
			if !ok {
				continue
			}
			if i, ok := specIndex(v.Field); ok {
				s.table[slot].set(i, v)
			}
		}
	}
	if failed > 0 && failed == len(s.watches) {
		return fmt.Errorf("dcgm: read field values: %w", last)
	}
	return nil
}

func (s *Source) logEvent(e Event) {
	s.log.Warn("GPU event", "kind", e.Kind, "gpu_uuid", e.GPUUUID, "gpu_index", e.GPUIndex, "xid", e.XID,
		"system", e.System, "severity", e.Severity, "code", e.Code, "message", e.Message)
}

// Close stops the watches, frees the source's DCGM groups and shuts DCGM down.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for i := range s.units {
		for c := colNone + 1; c < numColumns; c++ {
			s.m.fieldSupported.DeleteLabelValues(s.units[i].UUID, c.String())
		}
	}
	return s.eng.Close()
}
