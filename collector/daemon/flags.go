package daemon

import (
	"time"

	"github.com/gpupool/gpupool/collector/sim"
)

// Flags are `gpupool collector`'s flags; a zero (or, for Speed, negative) value
// leaves the configuration's setting.
type Flags struct {
	Source, Trace, Record, DCGMAddress, Cluster, Node string
	Strict                                            bool
	Interval                                          time.Duration
	Speed                                             float64
	SpoolDir, AgentKey, AgentSecret                   string
}

// Apply puts the flags over the collector's configuration c and the simulated
// fleet's s: a trace implies the replay source unless one is named, and the
// interval is also the simulated tick.
func (f Flags) Apply(c *Config, s *sim.Config) {
	if f.Trace != "" {
		c.Trace.File = f.Trace
		if f.Source == "" {
			f.Source = SourceReplay
		}
	}
	for _, v := range []struct {
		dst *string
		v   string
	}{{&c.Source, f.Source}, {&c.Record, f.Record},
		{&c.DCGM.Address, f.DCGMAddress}, {&c.Cluster, f.Cluster}, {&c.Node, f.Node}, {&c.Spool.Dir, f.SpoolDir},
		{&c.Agent.PublicKeyFile, f.AgentKey}, {&c.Agent.SecretFile, f.AgentSecret}} {
		if v.v != "" {
			*v.dst = v.v
		}
	}
	c.Trace.Strict = c.Trace.Strict || f.Strict
	if f.Interval > 0 {
		c.Interval, s.Tick = f.Interval, f.Interval
	}
	if f.Speed >= 0 {
		c.Trace.Speed = f.Speed
	}
}
