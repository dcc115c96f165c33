package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/simrun"
	"github.com/gpupool/gpupool/internal/summary"
	"github.com/gpupool/gpupool/store"
)

// summary prints the run's tables, and fails when a published sample was not
// stored.
func (d *Demo) summary(ctx context.Context, elapsed time.Duration, base *Effect) error {
	dr := d.driver
	s, err := analyzer.Summarize(ctx, d.store, dr.Start(), dr.End())
	if err != nil {
		return err
	}
	counts, lost, err := d.counts(s.Rows)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nSimulated %s (%s → %s) in %s.\n", dr.End().Sub(dr.Start()), dr.Start().Format("2006-01-02 15:04"),
		dr.End().Format("2006-01-02 15:04"), elapsed.Round(100*time.Millisecond))
	sections := storeSections(s)
	large, err := largeJobWaits(ctx, d.store, dr.Start(), dr.End())
	if err != nil {
		return err
	}
	sections = append(sections, large)
	an, err := d.passes.summary(ctx, dr.Start(), dr.End())
	if err != nil {
		return err
	}
	sections = append(sections, an...)
	if base != nil && d.passes.loop != nil {
		on, err := d.measure(ctx)
		if err != nil {
			return err
		}
		sections = append(sections, effectSections(*base, on)...)
	}
	eff, err := schedulerEffect(ctx, d.cfg.Sim, dr.End().Sub(dr.Start()), d.cfg.Demo.Admission != config.AdmissionFleet, d.placement)
	if err != nil {
		return err
	}
	sections = append(sections, eff...)
	sections = append(sections, summary.Section{Title: "Samples: published by collectors vs stored in ClickHouse", Table: counts})
	if err := summary.Write(d.out, fit(sections)); err != nil {
		return err
	}
	if err := writeCapacity(ctx, d.out, d.store, d.cfg.Sim); err != nil {
		return err
	}
	if err := writeNeverStarted(ctx, d.out, d.store, dr.Start(), dr.End()); err != nil {
		return err
	}
	if l := d.passes.loop; l != nil && l.gate != nil && !l.svc.Placed() {
		fmt.Fprintln(d.out, wrap("Placement: the scheduler admitted by GPUs free per card and cluster and the fleet placed the jobs "+
			"(--placement=true: the scheduler places them on nodes, with reservations and backfill)", maxWidth))
	} else if l != nil && l.gate != nil {
		missed, run := l.fleet.PlacementMisses()
		fmt.Fprintln(d.out, wrap(fmt.Sprintf("Jobs the fleet ran where the scheduler placed them: %d; found a placed GPU busy (the two pictures differed; 0 expected): %d %v; "+
			"GPUs reported held outside the scheduler while it had given them away: %d", run, missed, l.fleet.PlacementMissReasons(), l.gate.Conflicts), maxWidth))
	}
	fmt.Fprintf(d.out, "\n%s\n", wrap(d.passes.line(), maxWidth))
	st := d.ingest.Stats()
	fmt.Fprintf(d.out, "\nSamples lost: %d   dead letters: %d   redelivered-and-deduplicated: %d\n", lost, st.DeadLetters, st.DedupHits)
	if lost != 0 {
		return errors.New("demo: samples were lost between collectors and the store")
	}
	return nil
}

// storeSections are the run's tables read from the store (analyzer.Summarize).
func storeSections(s *analyzer.Summary) []summary.Section {
	return []summary.Section{
		{Title: "GPU-hours by team and card type (allocated to jobs; a MIG slice counts as its share of the GPU)", Table: s.GPUHours},
		{Title: "Utilisation by card type (fraction of time active, over every sample: p50 and p95)", Table: s.Utilisation},
		{Title: "Jobs submitted in the run, every source (hand-started processes too: they never wait); queue wait p50/p95 (min), submit to start, of those started", Table: s.Jobs},
		{Title: "Failures by reason: attempts that ended in the run and did not succeed; share = of all ended attempts; " +
			"reclaimed_by_pool = GPUs taken back by the pool's policies or quotas", Table: s.Failures},
		{Title: "Cost by cluster: GPUs, energy at the cluster's price per kWh, queue wait as an opportunity cost", Table: s.Costs},
		{Title: "Output by model (what launchers reported; empty: nothing reported, never 0)", Table: s.Output},
	}
}

// measure is this run's Effect, from the store, with the scheduler's decisions.
func (d *Demo) measure(ctx context.Context) (Effect, error) {
	start, end := d.driver.Start(), d.driver.End()
	if err := chargeback.Refresh(ctx, d.store, end); err != nil {
		return Effect{}, fmt.Errorf("demo: %w", err)
	}
	e, err := measure(ctx, d.store, start, end)
	if err != nil {
		return e, err
	}
	e.Enforce = true
	e.Actions, err = d.passes.loop.actions(ctx)
	return e, err
}

// counts sets what the collectors published beside what the store holds (rows:
// the summary's table_name, rows, duplicates), and sums what was lost.
func (d *Demo) counts(res *store.Result) (*store.Result, int64, error) {
	stored, dups := map[string]uint64{}, map[string]uint64{}
	rows := store.Read(res, "demo: stored rows")
	for rows.Next() {
		name := rows.Str("table_name")
		stored[name], dups[name] = uint64(rows.Int("rows")), uint64(rows.Int("duplicates"))
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	counts := &store.Result{Columns: []store.ColumnMeta{
		{Name: "kind", Type: "String"}, {Name: "published", Type: "UInt64"}, {Name: "stored", Type: "UInt64"},
		{Name: "lost", Type: "Int64"}, {Name: "duplicates", Type: "UInt64"},
	}}
	pub := d.driver.Published()
	var lost int64
	for _, k := range []struct {
		kind, table string
		pub         uint64
	}{
		{"gpu samples", "gpu_samples", pub.GPURows},
		{"process samples", "process_samples", pub.ProcessRows},
		{"job events", "job_events", d.driver.JobEvents()},
	} {
		l := int64(k.pub) - int64(stored[k.table])
		lost += max(l, 0)
		counts.Rows = append(counts.Rows, []any{k.kind, k.pub, stored[k.table], l, dups[k.table]})
	}
	return counts, lost, nil
}

// schedulerEffect is the fast benchmark beside the measured table: simrun runs
// the demo's fleet (same configuration, seed and span) twice more in the
// simulator alone, policies off and on, the findings drawn from the simulator's
// ground truth (a perfect analyzer) and measured from it; with admit the
// scheduler admits the fleet's jobs there too, and with placed it places them
// on the nodes, as in the pipeline.
func schedulerEffect(ctx context.Context, fleet sim.Config, span time.Duration, admit, placed bool) ([]summary.Section, error) {
	var reps []simrun.Report
	for _, enforce := range []bool{false, true} {
		cfg := simrun.DefaultConfig()
		cfg.Sim, cfg.Duration, cfg.Enforce, cfg.Admission = fleet, span, enforce, admit
		cfg.Placed = admit && placed
		if span < cfg.Step {
			cfg.Step = span
		}
		rep, err := simrun.Run(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("demo: scheduler simulation: %w", err)
		}
		reps = append(reps, rep)
	}
	return fastSections(summary.SchedulerEffect(reps...).Table), nil
}

// fastSections splits the fast benchmark's table (summary.SchedulerEffect) in
// two, as the measured one: capacity use and actions, then waits.
func fastSections(res *store.Result) []summary.Section {
	return []summary.Section{
		{
			Title: "Fast benchmark (internal/simrun, not the pipeline): the same fleet, seed and GPU units in the simulator alone, " +
				"policies off vs on, findings from its ground truth",
			Table: columns(res, "enforcement", "utilisation_pct", "effective_pct", "goodput_gpu_hours", "idle_gpu_hours", "zombie_gpu_hours",
				"reclaims", "kills", "requeued"),
		},
		{
			Title: "Fast benchmark: wait (min) of the same jobs as the measured table (submitted in the run, waited for the scheduler, " +
				"not hand-started); requeued attempts apart",
			Table: columns(res, "enforcement", "wait_mean_min", "wait_p50_min", "wait_p95_min", "requeued_wait_p95_min"),
		},
	}
}
