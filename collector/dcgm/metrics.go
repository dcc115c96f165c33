package dcgm

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the DCGM source's Prometheus metrics.
type Metrics struct {
	fieldSupported *prometheus.GaugeVec
	events         *prometheus.CounterVec
	errors         *prometheus.CounterVec
}

// NewMetrics creates the DCGM source metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		fieldSupported: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_collector_dcgm_field_supported",
			Help: "1 if DCGM reports the sample column (trace format name, e.g. sm_active) for the GPU or MIG instance, 0 if it stays missing.",
		}, []string{"gpu_uuid", "field"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_collector_dcgm_events_total",
			Help: "GPU events seen by the DCGM source, by kind (xid, health) and health watch system (pcie, memory, thermal, power, nvlink, …; empty for xid).",
		}, []string{"kind", "system"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_collector_dcgm_errors_total",
			Help: "Failed DCGM source operations, by operation (latest, health, processes).",
		}, []string{"op"}),
	}
	if reg != nil {
		reg.MustRegister(m.fieldSupported, m.events, m.errors)
	}
	return m
}
