package nvml

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// Source is a collector.Source reading the node's GPUs through NVML. Its methods
// are safe for concurrent use (they take turns).
type Source struct {
	cfg     Config
	lib     library
	log     *slog.Logger
	metrics *Metrics

	mu      sync.Mutex
	closed  bool
	gpus    []*gpuState
	driver  string // the driver's version, read once it answers
	scratch schemas.SampleBatch
	wg      sync.WaitGroup
	xid     xidState
}

var _ collector.Source = (*Source)(nil)

// Option changes how New builds a Source.
type Option func(*options)

type options struct {
	log     *slog.Logger
	metrics *Metrics
	lib     library
}

// WithLogger sets the source's logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithMetrics makes the source report into m (shared by several sources if need
// be); without it the source's metrics are not registered anywhere.
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// withLibrary replaces NVML, for tests.
func withLibrary(l library) Option { return func(o *options) { o.lib = l } }

// New loads NVML (libnvidia-ml.so.1) and initialises it. On a host without the
// NVIDIA driver the error wraps ErrNoLibrary; when the library loads but cannot
// initialise, ErrInit. Close releases NVML.
func New(cfg Config, opts ...Option) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nvml: config: %w", err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	log := o.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.metrics == nil {
		o.metrics = NewMetrics(nil)
	}
	lib := o.lib
	if lib == nil {
		l, st := openLibrary()
		if st != success {
			return nil, initError(st)
		}
		lib = l
	}
	return &Source{cfg: cfg, lib: lib, log: log.With("component", "nvml"), metrics: o.metrics}, nil
}

// initError says what a failed nvmlInit means and what to do about it.
func initError(st status) error {
	switch st {
	case errLibraryNotFound:
		if builtWithoutCgo {
			return fmt.Errorf("%w: this binary was built with CGO_ENABLED=0 and cannot load it (rebuild with CGO_ENABLED=1)", ErrNoLibrary)
		}
		return fmt.Errorf("%w: install the NVIDIA driver (nvidia-driver / cuda-drivers) or run on a GPU node; in a container, start it with the NVIDIA Container Toolkit (--gpus)", ErrNoLibrary)
	case errDriverNotLoaded:
		return fmt.Errorf("%w: %v: the NVIDIA kernel module is not loaded (check nvidia-smi and dmesg)", ErrInit, st)
	case errNoPermission:
		return fmt.Errorf("%w: %v: cannot open /dev/nvidia* (run as root or give the user access to the devices)", ErrInit, st)
	case errLibRMVersionMismatch:
		return fmt.Errorf("%w: %v: the driver library and kernel module differ in version (reboot or reload the module after a driver upgrade)", ErrInit, st)
	}
	return fmt.Errorf("%w: nvmlInit: %v", ErrInit, st)
}

// Close frees the XID event set and shuts NVML down. Using the source
// afterwards returns ErrClosed.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	freeErr := s.closeEvents()
	if st := s.lib.Shutdown(); st != success {
		return fmt.Errorf("nvml: shutdown: %w", st)
	}
	if freeErr != nil {
		return fmt.Errorf("nvml: free the XID event set: %w", freeErr)
	}
	return nil
}

// Sample appends one GPUSample per GPU, or per MIG instance of a MIG-enabled GPU,
// and one ProcessSample per process on each, all at time at. A GPU that is lost
// or fails to answer is left out (and counted, and logged); Sample fails only when
// NVML cannot list the GPUs or every GPU is lost.
func (s *Source) Sample(ctx context.Context, at time.Time, b *schemas.SampleBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.collect(at, true, b)
}

// Processes returns one ProcessSample per process on each GPU (or MIG instance)
// at time at, without reading the GPUs' own values. A DCGM-based source uses it to
// list PIDs, which DCGM cannot. The slice is the caller's.
func (s *Source) Processes(ctx context.Context, at time.Time) ([]schemas.ProcessSample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scratch.Reset()
	if err := s.collect(at, false, &s.scratch); err != nil {
		return nil, err
	}
	return append([]schemas.ProcessSample(nil), s.scratch.Processes...), nil
}

// collect reads every GPU, in parallel because some NVML calls block (PCIe
// throughput takes 20 ms), and appends their rows to b in GPU order.
func (s *Source) collect(at time.Time, wantGPUs bool, b *schemas.SampleBatch) error {
	if s.closed {
		return ErrClosed
	}
	n, st := s.lib.DeviceCount()
	if st != success {
		s.metrics.callErrors.WithLabelValues("DeviceCount", st.Error()).Inc()
		return fmt.Errorf("nvml: count GPUs: %w", st)
	}
	for len(s.gpus) < n {
		s.gpus = append(s.gpus, newGPUState(len(s.gpus)))
	}
	gpus := s.gpus[:n]
	if n == 1 {
		gpus[0].sample(s, at, wantGPUs)
	} else {
		s.wg.Add(n)
		for _, g := range gpus {
			go sampleAndDone(&s.wg, g, s, at, wantGPUs)
		}
		s.wg.Wait()
	}
	if wantGPUs {
		s.openEvents()
		for _, g := range gpus {
			s.registerXID(g)
		}
		s.drainXIDs(gpus)
	}
	if s.driver == "" && wantGPUs {
		if v, st := s.lib.DriverVersion(); st == success {
			s.driver = v
		} else if !st.unsupported() {
			s.metrics.callErrors.WithLabelValues("SystemGetDriverVersion", st.Error()).Inc()
		}
	}
	lost := 0
	for _, g := range gpus {
		s.noteLost(g)
		if g.lost {
			lost++
			continue
		}
		first := len(b.GPUs)
		b.GPUs = append(b.GPUs, g.gpus...)
		for i := first; i < len(b.GPUs); i++ {
			b.GPUs[i].DriverVersion = s.driver
			b.GPUs[i].XID = g.xidGPU.pending
		}
		if len(b.GPUs) > first {
			g.xidGPU.pending = 0 // carried: the next sample has it only if it comes again
		}
		b.Processes = append(b.Processes, g.procs...)
	}
	s.metrics.gpusLost.Set(float64(lost))
	if n > 0 && lost == n {
		return fmt.Errorf("%w: %d of %d GPUs answer ERROR_GPU_IS_LOST (see dmesg for Xid 79; the GPUs need a reset)", ErrAllGPUsLost, lost, n)
	}
	return nil
}

func sampleAndDone(wg *sync.WaitGroup, g *gpuState, s *Source, at time.Time, wantGPUs bool) {
	defer wg.Done()
	g.sample(s, at, wantGPUs)
}

// noteLost logs a GPU becoming lost, or answering again.
func (s *Source) noteLost(g *gpuState) {
	switch {
	case g.lostNow && !g.lost:
		s.log.Warn("GPU lost: not sampled until it answers again (see dmesg for Xid 79; it needs a reset)",
			"gpu_index", g.index, "gpu_uuid", g.uuid)
	case !g.lostNow && g.lost:
		s.log.Info("GPU answers again", "gpu_index", g.index, "gpu_uuid", g.uuid)
	}
	g.lost = g.lostNow
}
