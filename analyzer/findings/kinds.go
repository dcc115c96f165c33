package findings

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// detector is one finding kind's detector side; what other packages know about
// the kind is its descriptor in schemas (schemas.KindInfo). Adding a kind adds a
// row here, its descriptor in schemas/finding_kinds.go, its detector's own file
// and its section of Thresholds, named as the kind (TestKindTables).
type detector struct {
	kind schemas.FindingKind
	// detect runs the detector over the window ending at the pass's now.
	detect func(a *Analyzer, ctx context.Context, ps *pass) ([]detection, error)
	// window is how long the condition must hold under t before a pass can see it.
	window func(t Thresholds) time.Duration
}

// detectors is the detector table, one row per kind of schemas.FindingKinds.
var detectors = []detector{
	{schemas.KindIdle, (*Analyzer).detectIdle, func(t Thresholds) time.Duration { return t.Idle.Window }},
	{schemas.KindZombie, (*Analyzer).detectZombies, func(t Thresholds) time.Duration { return t.Zombie.OrphanWindow }},
	{schemas.KindHung, (*Analyzer).detectHung, func(t Thresholds) time.Duration { return t.Hung.Window }},
	{schemas.KindMemoryBound, (*Analyzer).detectMemoryBound, func(t Thresholds) time.Duration { return t.MemoryBound.Window }},
	{schemas.KindMemoryCapacity, (*Analyzer).detectMemoryCapacity, func(t Thresholds) time.Duration { return t.MemoryCapacity.Window }},
	{schemas.KindWrongCard, (*Analyzer).detectWrongCard, func(t Thresholds) time.Duration { return t.WrongCard.Window }},
	{schemas.KindLowUtil, (*Analyzer).detectLowUtil, func(t Thresholds) time.Duration { return max(t.LowUtil.Window, t.LowUtil.MinRuntime) }},
	{schemas.KindComputeBound, (*Analyzer).detectComputeBound, func(t Thresholds) time.Duration { return t.ComputeBound.Window }},
}

// detectorOf returns kind k's row of detectors.
func detectorOf(k schemas.FindingKind) (detector, bool) {
	for _, d := range detectors {
		if d.kind == k {
			return d, true
		}
	}
	return detector{}, false
}

// Window is kind k's detection window under t: how long its condition must hold
// before a pass can see it (0 for a kind without one).
func (t Thresholds) Window(k schemas.FindingKind) time.Duration {
	if d, ok := detectorOf(k); ok {
		return d.window(t)
	}
	return 0
}
