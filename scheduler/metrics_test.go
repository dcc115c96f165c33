package scheduler

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestQueueGauges checks the queue and pool gauges after a pass: queue a borrows
// b's idle H100s, and a third job waits for GPUs that are all taken.
func TestQueueGauges(t *testing.T) {
	m := NewMetrics(prometheus.NewPedanticRegistry())
	h := newHarness(t, testConfig(), WithMetrics(m))
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, Card: "H100-80GB"})
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 4, Card: "H100-80GB"})
	h.pass()
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB"})
	h.clock.advance(10 * time.Minute)
	h.pass()

	for _, c := range []struct {
		name string
		g    prometheus.Gauge
		want float64
	}{
		{"pending a", m.queuePending.WithLabelValues("a", "train"), 1},
		{"pending b", m.queuePending.WithLabelValues("b", "train"), 0},
		{"oldest wait a", m.queueOldestWait.WithLabelValues("a", "train"), 600},
		{"oldest wait b", m.queueOldestWait.WithLabelValues("b", "train"), 0},
		{"capacity train H100", m.poolCapacity.WithLabelValues("train", "H100-80GB"), 8},
		{"allocated train H100", m.poolAllocated.WithLabelValues("train", "H100-80GB"), 8},
		{"capacity infer L40S", m.poolCapacity.WithLabelValues("infer", "L40S-48GB"), 4},
		{"allocated infer L40S", m.poolAllocated.WithLabelValues("infer", "L40S-48GB"), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := testutil.ToFloat64(c.g); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	// A pool never has a series for a card it neither holds nor uses.
	if n := testutil.CollectAndCount(m.poolCapacity); n != 3 {
		t.Errorf("%d pool capacity series, want 3 (train H100, infer L40S, dev L40S)", n)
	}
}

// TestFragmentationGauges: with nodes, two 3-GPU jobs leave one GPU free on
// each 4-GPU H100 node; a 2-GPU job that must sit on one node waits, and both
// free GPUs are stranded (a 2-GPU job free to span nodes would take them).
func TestFragmentationGauges(t *testing.T) {
	m := NewMetrics(prometheus.NewPedanticRegistry())
	h := newHarness(t, placedTestConfig(), WithMetrics(m))
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 3, Card: "H100-80GB"})
	h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 3, Card: "H100-80GB"})
	h.pass()
	free, stranded, gang := m.freeGPUs.WithLabelValues("c1", "H100-80GB"), m.strandedGPUs.WithLabelValues("c1", "H100-80GB"), m.largestOnNode.WithLabelValues("c1", "H100-80GB")
	if f, s, g := testutil.ToFloat64(free), testutil.ToFloat64(stranded), testutil.ToFloat64(gang); f != 2 || s != 0 || g != 1 {
		t.Fatalf("nothing waits: free %v stranded %v most on one node %v, want 2, 0 (idle, not stranded), 1", f, s, g)
	}
	w := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, GPUsPerNode: 2, Card: "H100-80GB"})
	h.pass()
	if j := h.job(w.ID); j.State != StateQueued {
		t.Fatalf("the 2-GPU job is %s, want queued (one GPU free per node)", j.State)
	}
	if f, s := testutil.ToFloat64(free), testutil.ToFloat64(stranded); f != 2 || s != 2 {
		t.Fatalf("a 2-GPU job waits: free %v stranded %v, want 2 and 2", f, s)
	}
	if s := testutil.ToFloat64(m.strandedGPUs.WithLabelValues("c1", "L40S-48GB")); s != 0 {
		t.Fatalf("L40S stranded %v: nothing waits for it", s)
	}
}

// TestPoolGaugesMIG: MIG instances get series of their own (card
// "<card>/<profile>"), never added to the card's GPUs.
func TestPoolGaugesMIG(t *testing.T) {
	m := NewMetrics(prometheus.NewPedanticRegistry())
	h := newHarness(t, migTestConfig(), WithMetrics(m))
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 3, MIGProfile: "1g.10gb"})
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB"})
	h.pass()
	for _, c := range []struct {
		card            string
		capacity, alloc float64
	}{{"H100-80GB", 6, 2}, {"H100-80GB/1g.10gb", 14, 3}} {
		if got := testutil.ToFloat64(m.poolCapacity.WithLabelValues("train", c.card)); got != c.capacity {
			t.Errorf("capacity train %s: %v, want %v", c.card, got, c.capacity)
		}
		if got := testutil.ToFloat64(m.poolAllocated.WithLabelValues("train", c.card)); got != c.alloc {
			t.Errorf("allocated train %s: %v, want %v", c.card, got, c.alloc)
		}
	}
}
