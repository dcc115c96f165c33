package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/internal/config"
)

// TestApply: passes every 15 min of simulated time by default, findings resolved
// no faster, a run ending at the start of today, speed 0 as fast as possible; a
// run that would end in the future is refused by New.
func TestApply(t *testing.T) {
	c := config.Default()
	c.Demo.Speed = 0
	Apply(&c, 0)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	if c.Analyzer.Interval != DefaultAnalyzeEvery || c.Analyzer.Findings.ResolveAfter < DefaultAnalyzeEvery ||
		!c.Sim.Start.Add(c.Demo.Duration).Equal(today) || c.Demo.Speed != 1e9 {
		t.Fatalf("applied: interval %s, resolve after %s, start %s, speed %g", c.Analyzer.Interval,
			c.Analyzer.Findings.ResolveAfter, c.Sim.Start, c.Demo.Speed)
	}
	if err := c.Finish(""); err != nil {
		t.Fatal(err)
	}
	if _, err := New(c); err != nil {
		t.Fatalf("New: %v", err)
	}
	c.Sim.Start = time.Now().Add(time.Hour)
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "in the future") {
		t.Fatalf("a run ending in the future: %v", err)
	}
	c = config.Default()
	Apply(&c, time.Hour)
	if c.Analyzer.Interval != time.Hour || c.Analyzer.Findings.ResolveAfter < time.Hour || c.Analyzer.Findings.HintInterval < time.Hour {
		t.Errorf("--analyze-every 1h: %+v", c.Analyzer.Findings)
	}
}
