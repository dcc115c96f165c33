package gpu

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/dcgm"
	"github.com/gpupool/gpupool/collector/nvml"
)

// Kinds of source, as Config.Source names them and Open reports them.
const (
	KindAuto = "auto"
	KindDCGM = "dcgm"
	KindNVML = "nvml"
)

// Config says which telemetry library to open and how.
type Config struct {
	// Source is auto (DCGM if it initialises, else NVML), dcgm or nvml.
	Source string      `yaml:"source"`
	DCGM   dcgm.Config `yaml:"dcgm"`
	NVML   nvml.Config `yaml:"nvml"`
}

// DefaultConfig picks automatically, with each library's defaults.
func DefaultConfig() Config {
	return Config{Source: KindAuto, DCGM: dcgm.DefaultConfig(), NVML: nvml.DefaultConfig()}
}

// Validate checks the choice of source (each library checks its own settings
// when it is opened).
func (c Config) Validate() error {
	switch c.Source {
	case KindAuto, KindDCGM, KindNVML:
		return nil
	}
	return fmt.Errorf("source: %q is not auto, dcgm or nvml", c.Source)
}

// Source is an opened GPU telemetry source.
type Source interface {
	collector.Source
	Close() error
}

// Option changes how Open opens a source.
type Option func(*options)

type options struct {
	log *slog.Logger
	reg prometheus.Registerer
}

// WithLogger sets the sources' logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithRegisterer registers the sources' metrics (fields supported, call errors,
// health events) with reg (default: not registered).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// Open opens the source cfg names and says which kind it opened.
func Open(cfg Config, opts ...Option) (Source, string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, "", fmt.Errorf("gpu: %w", err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	log := o.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	nvmlOpts := []nvml.Option{nvml.WithLogger(log), nvml.WithMetrics(nvml.NewMetrics(o.reg))}
	if cfg.Source == KindNVML {
		s, err := nvml.New(cfg.NVML, nvmlOpts...)
		if err != nil {
			return nil, "", err
		}
		return s, KindNVML, nil
	}
	// DCGM cannot list a GPU's processes: NVML does that for it.
	procs, nvmlErr := nvml.New(cfg.NVML, nvmlOpts...)
	d, err := dcgm.New(cfg.DCGM, processLister(procs, nvmlErr), dcgm.WithLogger(log), dcgm.WithMetrics(dcgm.NewMetrics(o.reg)))
	if err == nil {
		return &dcgmWithNVML{Source: d, nvml: procs}, KindDCGM, nil
	}
	if cfg.Source == KindDCGM {
		if procs != nil {
			_ = procs.Close()
		}
		return nil, "", err
	}
	if nvmlErr == nil {
		log.Info("DCGM not available, using NVML", "dcgm_err", err)
		return procs, KindNVML, nil
	}
	return nil, "", fmt.Errorf("collector: no GPU telemetry on this node:\n  DCGM: %v\n  NVML: %v\n(on a machine without GPUs, use --source sim or --source replay)", err, nvmlErr)
}

// processLister is NVML's process list for DCGM, when NVML opened.
func processLister(s *nvml.Source, err error) dcgm.ProcessLister {
	if err != nil || s == nil {
		return nil
	}
	return s
}

// dcgmWithNVML closes the NVML source that lists processes for DCGM.
type dcgmWithNVML struct {
	*dcgm.Source
	nvml *nvml.Source
}

var _ Source = (*dcgmWithNVML)(nil)

// Close closes DCGM, then NVML.
func (d *dcgmWithNVML) Close() error {
	err := d.Source.Close()
	if d.nvml != nil {
		err = errors.Join(err, d.nvml.Close())
	}
	return err
}
