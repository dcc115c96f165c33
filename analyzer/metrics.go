package analyzer

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/analyzer/findings"

	"github.com/gpupool/gpupool/schemas"
)

// Metrics are the analyzer service's Prometheus metrics.
type Metrics struct {
	// passes counts passes by result: ok, or error (some step failed; the others
	// ran).
	passes *prometheus.CounterVec
	// passDuration is the wall time of a pass, seconds.
	passDuration prometheus.Histogram
	// detectorSuccess is, per finding kind, 1 when its detector ran ok in the last
	// pass that ran it and 0 when it failed (node_exporter's
	// node_scrape_collector_success): a failing detector is seen, not only logged.
	detectorSuccess *prometheus.GaugeVec
	// findingsOpen is the number of open findings per kind after the last pass.
	findingsOpen *prometheus.GaugeVec
	// raised and resolved count finding episodes opened and resolved.
	raised, resolved *prometheus.CounterVec
	// poolUtilisation is, per pool and card type, the share of the GPU time the
	// pool's jobs held over the last pass window that was measured active (engine,
	// DRAM or PCIe busy, as chargeback counts used_gpu_hours), ratio 0..1.
	poolUtilisation *prometheus.GaugeVec
	// poolAllocated is the GPUs the pool's jobs held on average over that window.
	poolAllocated *prometheus.GaugeVec
	// priceProblems is the number of price book problems for the cards in use
	// over Config.PriceCheckWindow before the last pass.
	priceProblems prometheus.Gauge
}

// NewMetrics creates the analyzer's metrics and registers them with reg (nil:
// not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_analyzer_passes_total",
			Help: "Analyzer passes (chargeback refresh, detectors, gauges) by result: ok, or error when a step failed.",
		}, []string{"result"}),
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpupool_analyzer_pass_duration_seconds",
			Help:    "Wall time of one analyzer pass.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12), // 50 ms .. ~100 s
		}),
		detectorSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_analyzer_detector_success",
			Help: "Whether the detector of a finding kind succeeded (1) or failed (0) in the last pass that ran it (hint detectors run every analyzer.findings.hint_interval).",
		}, []string{"kind"}),
		findingsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_findings_open",
			Help: "Findings open after the last pass, by kind.",
		}, []string{"kind"}),
		raised: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_findings_raised_total",
			Help: "Finding episodes opened, by kind.",
		}, []string{"kind"}),
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_findings_resolved_total",
			Help: "Finding episodes resolved, by kind.",
		}, []string{"kind"}),
		poolUtilisation: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_pool_utilisation_ratio",
			Help: "Share of the GPU time a pool's jobs held on a card type over the last pass window that was active (engine, DRAM or PCIe busy; chargeback's used_gpu_hours / measured held GPU-hours).",
		}, []string{"pool", "card"}),
		poolAllocated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_pool_allocated_gpus",
			Help: "GPUs a pool's jobs held on a card type, on average over the last pass window (a MIG slice counts as its share).",
		}, []string{"pool", "card"}),
		priceProblems: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpupool_price_book_problems",
			Help: "Price book problems (gaps, overlaps, mixed currencies, …) for the cards in use over analyzer.price_check_window before the last pass.",
		}),
	}
	for _, k := range schemas.FindingKinds {
		m.findingsOpen.WithLabelValues(string(k))
		m.raised.WithLabelValues(string(k))
		m.resolved.WithLabelValues(string(k))
	}
	m.passes.WithLabelValues("ok")
	m.passes.WithLabelValues("error")
	if reg != nil {
		reg.MustRegister(m.passes, m.passDuration, m.detectorSuccess, m.findingsOpen, m.raised, m.resolved,
			m.poolUtilisation, m.poolAllocated, m.priceProblems)
	}
	return m
}

// detectors sets the success of each detector the pass ran: 0 for those in
// run.Failed, 1 for the others it detected with. Kinds it skipped (hints between
// their intervals) or never reached (a pass that failed first) keep their value.
func (m *Metrics) detectors(run findings.RunResult) {
	for k := range run.Detected {
		if run.Failed[k] == nil && !slices.Contains(run.Skipped, k) {
			m.detectorSuccess.WithLabelValues(string(k)).Set(1)
		}
	}
	for k := range run.Failed {
		m.detectorSuccess.WithLabelValues(string(k)).Set(0)
	}
}
