package ingest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/schemas"
)

// TestSimulatedFleetEndToEnd runs the real pipeline: a simulated fleet's collectors
// publish to an embedded NATS server while ingest writes to chDB; ingest is stopped
// and replaced twice mid-stream. Every published row must be stored exactly once.
func TestSimulatedFleetEndToEnd(t *testing.T) {
	e := newEnv(t)
	cfg := sim.DefaultConfig()
	cfg.Clusters, cfg.NodesPerCluster, cfg.GPUsPerNode = 1, 4, 4
	cfg.Start = time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Hour)
	fleet, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var cols []*collector.Collector
	for _, n := range fleet.Nodes() {
		cc := collector.DefaultConfig()
		cc.Cluster, cc.Node = n.Cluster(), n.Name()
		c, err := collector.New(cc, n, e.bus.JS)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}

	var mu sync.Mutex
	stop, _ := startIngest(t, e, testConfig())
	var jobEvents uint64
	const ticks = 720 // two simulated hours at 10 s
	for k := 0; k < ticks; k++ {
		at := cfg.Start.Add(time.Duration(k) * cfg.Tick)
		events := fleet.Advance(at)
		if len(events) > 0 {
			data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: "e2e", Seq: uint64(k), Events: events})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.bus.JS.PublishMsg(t.Context(), &nats.Msg{Subject: bus.JobsSubject(events[0].Cluster), Data: data}); err != nil {
				t.Fatal(err)
			}
			jobEvents += uint64(len(events))
		}
		for _, c := range cols {
			if err := c.Collect(t.Context(), at); err != nil {
				t.Fatal(err)
			}
		}
		if k == ticks/3 || k == 2*ticks/3 {
			// Replace ingest while batches are in flight.
			mu.Lock()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			stop, _ = startIngest(t, e, testConfig())
			mu.Unlock()
		}
	}
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()

	var gpuRows, procRows uint64
	for _, c := range cols {
		st := c.Stats()
		gpuRows += st.GPURows
		procRows += st.ProcessRows
	}
	if gpuRows == 0 || procRows == 0 || jobEvents == 0 {
		t.Fatalf("the fleet produced nothing: %d gpu, %d process rows, %d job events", gpuRows, procRows, jobEvents)
	}
	assertExact(t, e.store, gpuRows, procRows, jobEvents)
	if n := count(t, e.store, "SELECT count() AS n FROM jobs WHERE start_time IS NOT NULL"); n == 0 {
		t.Error("no started job in the jobs view")
	}
	// Every process sample's job is known to the jobs view, except unattributed
	// (stray) processes.
	if n := count(t, e.store, "SELECT count() AS n FROM process_samples WHERE job != '' AND job NOT IN (SELECT job FROM jobs)"); n != 0 {
		t.Errorf("%d process rows name a job the jobs view does not know", n)
	}
	_ = context.Background
}
