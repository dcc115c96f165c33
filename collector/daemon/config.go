package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/agent"
	"github.com/gpupool/gpupool/collector/attribution"
	"github.com/gpupool/gpupool/collector/dcgm"
	"github.com/gpupool/gpupool/collector/gpu"
	"github.com/gpupool/gpupool/collector/nvml"
	"github.com/gpupool/gpupool/schemas"
)

// Sources Config.Source may name, besides the real ones of collector/gpu.
const (
	// SourceSim simulates a whole fleet (the configuration's sim section).
	SourceSim = "sim"
	// SourceReplay plays Config.Trace.File.
	SourceReplay = "replay"
)

var sources = []string{gpu.KindAuto, gpu.KindDCGM, gpu.KindNVML, SourceSim, SourceReplay}

// Config is the collector section of the configuration file.
type Config struct {
	collector.Config `yaml:",inline"`
	// Source is where samples come from: auto (DCGM if it initialises, else NVML,
	// else an error), dcgm, nvml, sim (a simulated fleet) or replay (a trace).
	Source string `yaml:"source"`
	// Trace is the replay source's input.
	Trace TraceConfig `yaml:"trace"`
	// Record writes everything the source sees to this trace file (.gz: gzipped).
	Record      string             `yaml:"record"`
	Attribution attribution.Config `yaml:"attribution"`
	NVML        nvml.Config        `yaml:"nvml"`
	DCGM        dcgm.Config        `yaml:"dcgm"`
	// Agent answers reclaim commands for this node when agent.public_key_file (or
	// agent.secret_file) is set.
	Agent agent.Config `yaml:"agent"`
}

// TraceConfig configures the replay source.
type TraceConfig struct {
	// File is the trace (JSON Lines, optionally gzip).
	File string `yaml:"file"`
	// Strict stops at the first bad line instead of counting and skipping it.
	Strict bool `yaml:"strict"`
	// Speed is trace seconds per wall second (1: real time; 0: as fast as possible).
	Speed float64 `yaml:"speed"`
}

// DefaultConfig returns the defaults: source auto, replay at real time.
func DefaultConfig() Config {
	return Config{
		Config: collector.DefaultConfig(), Source: gpu.KindAuto,
		Trace:       TraceConfig{Speed: 1},
		Attribution: attribution.DefaultConfig(),
		NVML:        nvml.DefaultConfig(),
		DCGM:        dcgm.DefaultConfig(),
		Agent:       agent.DefaultConfig(),
	}
}

// RealSource reports whether the collector reads a real GPU node (so it spools and
// attributes processes).
func (c Config) RealSource() bool {
	return c.Source == gpu.KindAuto || c.Source == gpu.KindDCGM || c.Source == gpu.KindNVML
}

// Resolve fills what follows from the rest: the node's name (the host name), the
// spool of a real source under dataDir, attribution and the agent working for
// this cluster and node, and the agent's state under dataDir (agent).
func (c *Config) Resolve(dataDir string) {
	if c.Node == "" {
		if h, err := os.Hostname(); err == nil {
			c.Node = h
		}
	}
	if c.Spool.Dir == "" && c.RealSource() {
		c.Spool.Dir = filepath.Join(dataDir, "spool")
	}
	c.Attribution.Cluster, c.Attribution.Node = c.Cluster, c.Node
	c.Agent.Cluster, c.Agent.Node = c.Cluster, c.Node
	if c.Agent.StateDir == "" {
		c.Agent.StateDir = filepath.Join(dataDir, "agent")
	}
}

// Validate checks the settings the source in use reads; each error names its
// field.
func (c Config) Validate() error {
	var errs []error
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(sources, c.Source) {
		errs = append(errs, schemas.Fieldf("source", "%q is not auto, dcgm, nvml, sim or replay", c.Source))
	}
	if c.Source == SourceReplay && c.Trace.File == "" {
		errs = append(errs, schemas.Field("trace.file", errors.New("the replay source needs a trace file")))
	}
	if c.Trace.Speed < 0 {
		errs = append(errs, schemas.Fieldf("trace.speed", "%g is negative", c.Trace.Speed))
	}
	if c.RealSource() {
		errs = append(errs, schemas.PrefixFields("attribution", c.Attribution.Validate()))
	}
	if c.Agent.Enabled() {
		errs = append(errs, schemas.PrefixFields("agent", c.Agent.Validate()))
	}
	return errors.Join(errs...)
}
