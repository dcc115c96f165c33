package demo

import (
	"fmt"
	"time"

	"github.com/gpupool/gpupool/internal/config"
)

// DefaultAnalyzeEvery is the simulated time between the demo's analyzer passes
// (the fleet waits for each; see passes).
const DefaultAnalyzeEvery = 15 * time.Minute

// Apply sets what the demo needs over the configuration, before it is validated:
// analyzer passes every analyzeEvery of simulated time (DefaultAnalyzeEvery when
// 0), findings resolved and hinted no faster than that, a simulated start that
// ends the run at the start of today (UTC) when none is set, and speed 0 as fast
// as possible.
func Apply(c *config.Config, analyzeEvery time.Duration) {
	if analyzeEvery <= 0 {
		analyzeEvery = DefaultAnalyzeEvery
	}
	c.Analyzer.Interval = analyzeEvery
	c.Analyzer.Findings.ResolveAfter = max(c.Analyzer.Findings.ResolveAfter, analyzeEvery)
	c.Analyzer.Findings.HintInterval = max(c.Analyzer.Findings.HintInterval, analyzeEvery)
	if c.Sim.Start.IsZero() {
		// Recent, so inside the raw-sample TTL, and never in the future.
		c.Sim.Start = time.Now().UTC().Truncate(24 * time.Hour).Add(-c.Demo.Duration)
	}
	if c.Demo.Speed == 0 {
		c.Demo.Speed = 1e9
	}
}

// check refuses a run whose samples ingest would reject as too far in the future.
func check(c config.Config, now time.Time) error {
	if end := c.Sim.Start.Add(c.Demo.Duration); end.After(now.Add(c.Ingest.MaxFutureSkew)) {
		return fmt.Errorf("demo: the simulation would end at %s, in the future; ingest rejects samples more than %s ahead (ingest.max_future_skew)",
			end.Format(time.RFC3339), c.Ingest.MaxFutureSkew)
	}
	return nil
}
