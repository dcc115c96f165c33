package scheduler

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the scheduler's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	actions     *prometheus.CounterVec
	jobs        *prometheus.GaugeVec
	recordErrs  prometheus.Counter
	publishErrs prometheus.Counter
	// The job event outbox (outbox.go): events held, publishes retried,
	// events dropped past the cap.
	outboxEvents   prometheus.Gauge
	publishRetries prometheus.Counter
	outboxDrops    prometheus.Counter
	findingErrs    prometheus.Counter
	passDuration   prometheus.Histogram

	queuePending    *prometheus.GaugeVec
	queueOldestWait *prometheus.GaugeVec
	poolCapacity    *prometheus.GaugeVec
	poolAllocated   *prometheus.GaugeVec

	// Fragmentation (placement.Fragmentation), by cluster and card: free
	// whole GPUs, those no queued shape can use, the most free on one node.
	freeGPUs, strandedGPUs, largestOnNode *prometheus.GaugeVec

	// refused counts pushed findings refused, by reason; claims the findings
	// whose claimed team or pool the scheduler's resolution contradicted.
	refused *prometheus.CounterVec
	claims  prometheus.Counter
}

// NewMetrics registers the scheduler's metrics with reg (nil: kept, not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_scheduler_actions_total", Help: "Audit rows written, by decision and outcome.",
		}, []string{"decision", "outcome"}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_jobs", Help: "Jobs in the scheduler's queues, by state.",
		}, []string{"state"}),
		recordErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_scheduler_audit_errors_total", Help: "Audit batches the recorder failed to store.",
		}),
		publishErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_scheduler_publish_errors_total", Help: "Job event batches that could not be published (they stay in the outbox).",
		}),
		outboxEvents: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_outbox_events", Help: "Job events in the outbox, not yet acknowledged by the bus.",
		}),
		publishRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_scheduler_publish_retries_total", Help: "Publishes of job event batches that had failed before.",
		}),
		outboxDrops: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_scheduler_outbox_dropped_events_total", Help: "Job events dropped unpublished: the outbox held its cap (the oldest go).",
		}),
		findingErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_scheduler_finding_errors_total", Help: "Passes that could not read findings.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_scheduler_findings_refused_total", Help: "Pushed findings refused, by reason (too_many: the identity holds max_pushed_findings; too_large).",
		}, []string{"reason"}),
		claims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_scheduler_finding_claims_ignored_total", Help: "Findings whose claimed team or pool disagreed with the owner the scheduler resolved (the claim is ignored).",
		}),
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpupool_scheduler_pass_seconds", Help: "Time one admission and policy pass took.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
		queuePending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_queue_pending_jobs", Help: "Jobs waiting for admission, by queue and pool.",
		}, []string{"queue", "pool"}),
		queueOldestWait: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_queue_oldest_wait_seconds", Help: "How long the longest-waiting pending job of the queue has waited in its current attempt (0: none pending).",
		}, []string{"queue", "pool"}),
		poolCapacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_pool_capacity_gpus", Help: "GPUs of each card type the pool holds (its configured capacity); for a MIG resource (card \"<card>/<profile>\"), instances.",
		}, []string{"pool", "card"}),
		poolAllocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_pool_allocated_gpus", Help: "GPUs of each card type held by the pool's admitted and reclaiming jobs (borrowed ones included).",
		}, []string{"pool", "card"}),
		freeGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_free_gpus", Help: "Whole GPUs no job holds, by cluster and card type (placing scheduler only).",
		}, []string{"cluster", "card"}),
		strandedGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_stranded_gpus", Help: "Free whole GPUs on nodes where no queued job's shape fits now, by cluster and card type (0 when nothing waits there).",
		}, []string{"cluster", "card"}),
		largestOnNode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_scheduler_node_free_gpus_max", Help: "The most whole GPUs free on one node (the largest gang that could start now on one node), by cluster and card type.",
		}, []string{"cluster", "card"}),
	}
	if reg != nil {
		reg.MustRegister(m.actions, m.jobs, m.recordErrs, m.publishErrs, m.outboxEvents, m.publishRetries, m.outboxDrops, m.findingErrs, m.refused, m.claims, m.passDuration,
			m.queuePending, m.queueOldestWait, m.poolCapacity, m.poolAllocated, m.freeGPUs, m.strandedGPUs, m.largestOnNode)
	}
	return m
}

func (m *Metrics) action(a *Action) {
	if m != nil {
		m.actions.WithLabelValues(a.Decision, a.Outcome).Inc()
	}
}

func (m *Metrics) inc(pick func(*Metrics) prometheus.Counter) {
	if m != nil {
		pick(m).Inc()
	}
}

// The counters inc takes: picked only once m is known not to be nil (a Service
// without metrics has none to count into).
func recordErrs(m *Metrics) prometheus.Counter     { return m.recordErrs }
func publishErrs(m *Metrics) prometheus.Counter    { return m.publishErrs }
func publishRetries(m *Metrics) prometheus.Counter { return m.publishRetries }
func findingErrs(m *Metrics) prometheus.Counter    { return m.findingErrs }

// queueState sets the queue and pool gauges from the engine at now; call with the
// service's lock held.
func (m *Metrics) queueState(e *Engine, now time.Time) {
	if m == nil {
		return
	}
	type poolCard struct{ pool, card string }
	alloc := map[poolCard]int{}
	oldest := map[string]time.Duration{}
	for _, j := range e.LiveJobs() {
		if j.State == StateQueued {
			oldest[j.Spec.Queue] = max(oldest[j.Spec.Queue], now.Sub(j.QueuedAt))
		}
	}
	for _, q := range e.Queues() {
		m.queuePending.WithLabelValues(q.Name, q.Pool).Set(float64(q.Pending))
		m.queueOldestWait.WithLabelValues(q.Name, q.Pool).Set(oldest[q.Name].Seconds())
		for _, c := range q.Cards {
			alloc[poolCard{q.Pool, c.Card}] += c.Used
		}
	}
	model := e.Model()
	for _, p := range model.Pools {
		// Card types, then the MIG resources ("<card>/<profile>", instances)
		// the pool holds or uses: series apart, an instance is not a GPU.
		var names []string
		for _, c := range model.Cards {
			names = append(names, c.Name)
		}
		for res := range p.Capacity {
			if strings.Contains(res, "/") {
				names = append(names, res)
			}
		}
		for pc := range alloc {
			if pc.pool == p.Name && strings.Contains(pc.card, "/") && p.Capacity[pc.card] == 0 {
				names = append(names, pc.card)
			}
		}
		for _, card := range names {
			n, used := p.Capacity[card], alloc[poolCard{p.Name, card}]
			if n == 0 && used == 0 {
				continue
			}
			m.poolCapacity.WithLabelValues(p.Name, card).Set(float64(n))
			m.poolAllocated.WithLabelValues(p.Name, card).Set(float64(used))
		}
	}
}

// fragmentation sets the fragmentation gauges from the engine; call with the
// service's lock held.
func (m *Metrics) fragmentation(e *Engine) {
	if m == nil {
		return
	}
	for _, d := range e.Fragmentation() {
		m.freeGPUs.WithLabelValues(d.Cluster, d.Card).Set(float64(d.Free))
		m.strandedGPUs.WithLabelValues(d.Cluster, d.Card).Set(float64(d.Stranded))
		m.largestOnNode.WithLabelValues(d.Cluster, d.Card).Set(float64(d.LargestOnNode))
	}
}

// findingsRefused counts n pushed findings refused for reason.
func (m *Metrics) findingsRefused(reason string, n int) {
	if m != nil {
		m.refused.WithLabelValues(reason).Add(float64(n))
	}
}

// disagreed counts a finding whose claimed owner was contradicted.
func (m *Metrics) disagreed() {
	if m != nil {
		m.claims.Inc()
	}
}

// outboxHeld sets the outbox gauge to n events.
func (m *Metrics) outboxHeld(n int) {
	if m != nil {
		m.outboxEvents.Set(float64(n))
	}
}

// outboxDropped counts n events the outbox's cap dropped.
func (m *Metrics) outboxDropped(n int) {
	if m != nil {
		m.outboxDrops.Add(float64(n))
	}
}
