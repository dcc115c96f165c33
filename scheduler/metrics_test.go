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
