package scheduler

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the scheduler's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	actions      *prometheus.CounterVec
	jobs         *prometheus.GaugeVec
	recordErrs   prometheus.Counter
	publishErrs  prometheus.Counter
	findingErrs  prometheus.Counter
	passDuration prometheus.Histogram
}

// NewMetrics registers the scheduler's metrics with reg.
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
			Name: "gpupool_scheduler_publish_errors_total", Help: "Job event batches that could not be published.",
		}),
		findingErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_scheduler_finding_errors_total", Help: "Passes that could not read findings.",
		}),
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpupool_scheduler_pass_seconds", Help: "Time one admission and policy pass took.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
	}
	reg.MustRegister(m.actions, m.jobs, m.recordErrs, m.publishErrs, m.findingErrs, m.passDuration)
	return m
}

func (m *Metrics) action(a *Action) {
	if m != nil {
		m.actions.WithLabelValues(a.Decision, a.Outcome).Inc()
	}
}

func (m *Metrics) inc(c prometheus.Counter) {
	if m != nil {
		c.Inc()
	}
}
