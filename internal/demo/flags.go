package demo

import (
	"time"

	"github.com/gpupool/gpupool/internal/config"
)

// Flags are `gpupool demo`'s flags; a zero (or, for Speed, negative) value
// leaves the configuration's setting.
type Flags struct {
	Duration     time.Duration
	Speed        float64
	Serve        bool
	Clusters     int
	Nodes        int
	GPUs         int
	Tick         time.Duration
	Seed         uint64
	Start        time.Time
	AnalyzeEvery time.Duration
}

// Apply puts the flags over c, then the demo's own defaults (Apply).
func (f Flags) Apply(c *config.Config) {
	if f.Duration > 0 {
		c.Demo.Duration = f.Duration
	}
	if f.Speed >= 0 {
		c.Demo.Speed = f.Speed
	}
	c.Demo.Serve = c.Demo.Serve || f.Serve
	for _, s := range []struct {
		v   int
		dst *int
	}{{f.Clusters, &c.Sim.Clusters}, {f.Nodes, &c.Sim.NodesPerCluster}, {f.GPUs, &c.Sim.GPUsPerNode}} {
		if s.v > 0 {
			*s.dst = s.v
		}
	}
	if f.Tick > 0 {
		c.Sim.Tick = f.Tick
	}
	if f.Seed > 0 {
		c.Sim.Seed = f.Seed
	}
	if !f.Start.IsZero() {
		c.Sim.Start = f.Start.UTC()
	}
	Apply(c, f.AnalyzeEvery)
}
