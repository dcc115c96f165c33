package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/scheduler/placement"
)

type fakeInventory struct{ seen []placement.Seen }

func (f *fakeInventory) Seen(context.Context, time.Time, time.Time) ([]placement.Seen, error) {
	return f.seen, nil
}

// TestInventoryCheck: a node the collectors report but the model lacks is
// logged once and counted, and logged again as resolved when it goes.
func TestInventoryCheck(t *testing.T) {
	fleet := placement.Fleet{Cards: []placement.Card{{Name: "H100-80GB", MemoryGiB: 80}},
		Clusters: []placement.Cluster{{Name: "c1", Nodes: []placement.Node{{Name: "n1", Card: "H100-80GB", GPUs: 8}}}}}
	src := &fakeInventory{seen: []placement.Seen{
		{Cluster: "c1", Node: "n1", Card: "H100-80GB", GPUs: 8},
		{Cluster: "c1", Node: "stray", Card: "H100-80GB", GPUs: 8},
	}}
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	c := newInventoryCheck(fleet, src, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	for range 2 {
		if _, err := c.check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "node c1/stray reports 8 × H100-80GB but is not in the model"); n != 1 {
		t.Errorf("the unknown node was logged %d times, want once:\n%s", n, logs.String())
	}
	if v := testutil.ToFloat64(c.gauge.WithLabelValues("unknown")); v != 1 {
		t.Errorf("unknown nodes gauge %v, want 1", v)
	}
	src.seen = src.seen[:1]
	if _, err := c.check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "inventory: resolved: node c1/stray") {
		t.Errorf("no resolved line:\n%s", logs.String())
	}
	if v := testutil.ToFloat64(c.gauge.WithLabelValues("unknown")); v != 0 {
		t.Errorf("unknown nodes gauge %v after it left, want 0", v)
	}
	if n, err := testutil.GatherAndCount(reg, "gpupool_scheduler_inventory_discrepancies"); err != nil || n != 4 {
		t.Errorf("registered series: %d, %v", n, err)
	}
}
