package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/internal/simhistory"
	"github.com/gpupool/gpupool/store"
)

// capacityWeeks is the simulator's history the demo's forecast is fitted on
// (after a warm-up week): four weeks, two to fit and the last to backtest at
// the least, as `gpupool capacity` needs.
const capacityWeeks = 4

// capacityOptions are the demo's forecast: four weeks ahead, a p95 wait of at
// most an hour.
var capacityOptions = capacity.Options{Weeks: 4, TargetP95: time.Hour, MaxExtraGPUs: 64}

// writeCapacity prints the capacity forecast and plan for the demo's fleet. A
// day of stored telemetry is too short to fit a season by hour of the week, so
// it is fitted on the simulator's history of the same fleet and seed: the
// capacityWeeks weeks before the demo's start (the fleet alone, not the
// pipeline, labelled so), priced from the demo's price book. `gpupool capacity`
// does the same over the store once it holds three weeks.
func writeCapacity(ctx context.Context, w io.Writer, st store.Store, fleet sim.Config) error {
	cfg := fleet
	day := fleet.Start.UTC().Truncate(24 * time.Hour)
	monday := day.AddDate(0, 0, -((int(day.Weekday())+6)%7)-7*(capacityWeeks+1))
	cfg.Start, cfg.Tick = monday, 10*time.Minute
	series, err := simhistory.Series(ctx, cfg, capacityWeeks)
	if err != nil {
		return fmt.Errorf("demo: capacity history: %w", err)
	}
	res, err := capacity.Analyze(ctx, pricebook.New(st), series, fleet.Start, capacityOptions)
	if err != nil {
		return fmt.Errorf("demo: capacity: %w", err)
	}
	fmt.Fprintf(w, "\n%s\n", wrap(fmt.Sprintf("Capacity forecast (analyzer/capacity on the simulator's history of this fleet and seed, the %d weeks before %s, "+
		"not the pipeline's day: a day is too short to fit; `gpupool capacity` does this over the store)", capacityWeeks, day.Format("2006-01-02")), maxWidth))
	return capacity.WriteTable(w, res, capacityOptions)
}
