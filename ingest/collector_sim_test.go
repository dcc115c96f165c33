package ingest_test

import (
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/daemon"
	"github.com/gpupool/gpupool/collector/sim"
)

// TestSimAtFullSpeedIsStored runs what a new user runs first, `gpupool collector
// --source sim --speed 0 --duration 2h` (a tiny fleet), then ingest: every row the
// collector published is stored and none is dead-lettered as from the future
// (the simulation used to start at now and run 2 h ahead of the clock).
func TestSimAtFullSpeedIsStored(t *testing.T) {
	e := newEnv(t)
	fleet := sim.DefaultConfig()
	fleet.Clusters, fleet.NodesPerCluster, fleet.GPUsPerNode = 1, 1, 2
	cfg := daemon.DefaultConfig()
	cfg.Source, cfg.Cluster, cfg.Node = daemon.SourceSim, "c1", "n1"
	cfg.Resolve(t.TempDir())
	icfg := testConfig()
	conn := &bus.Conn{Server: e.bus.Server, NC: e.bus.Conn, JS: e.bus.JS}
	d, err := daemon.New(cfg, fleet, conn, daemon.WithSimulation(2*time.Hour, 0, icfg.MaxFutureSkew))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	published := e.bus.Stored(t)
	stop, ing := startIngest(t, e, icfg)
	waitCaughtUp(t, e.bus.JS, icfg.Durable)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st := ing.Stats(); st.DeadLetters != 0 {
		t.Fatalf("%d messages dead-lettered", st.DeadLetters)
	}
	if published.SampleBatches != 720 {
		t.Errorf("%d batches published, want 720 (2 h of 10 s ticks)", published.SampleBatches)
	}
	assertExact(t, e.store, published.GPURows, published.ProcessRows, published.JobEvents)
}
