package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/store/backend"
)

// baselineSuffix names the policies-off run's database, beside the demo's.
const baselineSuffix = "_baseline"

// runBaseline runs the same fleet, seed and span with no scheduler acting on it,
// as fast as the machine goes, through its own embedded NATS (in-process only)
// into the database <database>_baseline, and measures it from what was stored.
// With an external NATS there is none: the run would share its streams.
func (d *Demo) runBaseline(ctx context.Context) (*Effect, error) {
	c := d.cfg
	if c.Bus.URL != "" {
		fmt.Fprintln(d.out, "(no policies-off run: it needs the embedded NATS, and bus.url is set)")
		return nil, nil
	}
	c.Bus.Embedded.DataDir, c.Bus.Embedded.Port = filepath.Join(c.DataDir, "nats-baseline"), 0
	c.Bus.Embedded.Users = nil
	c.Store.CHDB.Database += baselineSuffix
	c.Store.ClickHouse.Database += baselineSuffix
	c.Demo.Speed = 0
	if err := os.RemoveAll(c.Bus.Embedded.DataDir); err != nil {
		return nil, fmt.Errorf("demo: clear %s: %w", c.Bus.Embedded.DataDir, err)
	}
	if err := dropDatabase(ctx, c.Store); err != nil {
		return nil, err
	}
	b := &Demo{cfg: c, log: d.log, out: io.Discard, prog: d.prog, noPasses: true, placement: d.placement, phase: "policies off: "}
	defer b.close()
	if err := b.start(ctx); err != nil {
		return nil, err
	}
	if err := b.simulate(ctx); err != nil {
		return nil, err
	}
	if b.loop != nil && b.loop.err != nil {
		return nil, b.loop.err
	}
	if err := b.drain(ctx); err != nil {
		return nil, err
	}
	b.stopIngest()
	start, end := b.driver.Start(), b.driver.End()
	if err := chargeback.Refresh(ctx, b.store, end); err != nil {
		return nil, fmt.Errorf("demo: policies-off run: %w", err)
	}
	e, err := measure(ctx, b.store, start, end)
	if err != nil {
		return nil, err
	}
	if b.loop != nil { // the scheduler admitted its jobs
		if e.Actions, err = b.loop.actions(ctx); err != nil {
			return nil, err
		}
	}
	return &e, nil
}

// dropDatabase removes what an earlier policies-off run left in the database
// (an external ClickHouse keeps it; the embedded one was cleared with its path).
func dropDatabase(ctx context.Context, c backend.Config) error {
	if c.Backend != backend.ClickHouse {
		return nil
	}
	st, err := backend.Open(ctx, c, slog.New(slog.DiscardHandler), false)
	if err != nil {
		return nil // nothing to drop yet; opening the run's store reports a server that is not there
	}
	defer st.Close()
	if err := st.Exec(ctx, "DROP DATABASE IF EXISTS "+st.Database(), nil); err != nil {
		return fmt.Errorf("demo: drop %s: %w", st.Database(), err)
	}
	return nil
}
