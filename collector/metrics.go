package collector

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the collector's Prometheus metrics. One Metrics serves every collector
// of a process (the demo runs one per simulated node).
type Metrics struct {
	samples         *prometheus.CounterVec
	unattributed    prometheus.Counter
	batches         prometheus.Counter
	publishErrors   prometheus.Counter
	sampleErrors    prometheus.Counter
	publishDuration prometheus.Histogram
	batchBytes      prometheus.Histogram
	tickDuration    prometheus.Histogram

	attributionErrors prometheus.Counter
	spooled           prometheus.Counter
	spoolDropped      prometheus.Counter
	spoolRecords      prometheus.Gauge
	deadLettered      *prometheus.CounterVec
	deadLetteredRows  *prometheus.CounterVec
	outputScrapes     *prometheus.CounterVec
	cgroupErrors      prometheus.Counter
}

// NewMetrics creates the collector metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_collector_samples_published_total",
			Help: "Sample rows published and acknowledged by JetStream, by kind (gpu, process).",
		}, []string{"kind"}),
		unattributed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_unattributed_process_samples_total",
			Help: "Process sample rows whose process could not be attributed to a job (still published).",
		}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_batches_published_total",
			Help: "Sample batches published and acknowledged by JetStream.",
		}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_publish_errors_total",
			Help: "Failed publish attempts (each is retried).",
		}),
		sampleErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_sample_errors_total",
			Help: "Ticks whose source failed to sample.",
		}),
		publishDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpupool_collector_publish_duration_seconds",
			Help:    "Time from first publish attempt to JetStream ack, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
		batchBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpupool_collector_batch_size_bytes",
			Help:    "Encoded size of published sample batches.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 8),
		}),
		tickDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpupool_collector_tick_duration_seconds",
			Help:    "Time to sample, encode and publish one tick.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		attributionErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_attribution_errors_total",
			Help: "Processes whose job could not be determined because reading them failed (they stay unattributed).",
		}),
		spooled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_spooled_messages_total",
			Help: "Messages written to the disk spool because NATS was unreachable or the spool was not yet drained.",
		}),
		spoolDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_spool_dropped_messages_total",
			Help: "Spooled messages dropped, oldest first, to keep the spool within its size bound (lost data).",
		}),
		spoolRecords: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpupool_collector_spool_messages",
			Help: "Messages waiting in the disk spool.",
		}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_collector_dead_lettered_total",
			Help: "Sample batches this collector published that ingest dead-lettered (not stored), by ingest's reason (malformed, schema_version, invalid_value, other).",
		}, []string{"reason"}),
		deadLetteredRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_collector_dead_lettered_rows_total",
			Help: "Sample rows (GPU and process) in the batches ingest dead-lettered, by reason.",
		}, []string{"reason"}),
		outputScrapes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_collector_output_scrapes_total",
			Help: "Scrapes of the output counters jobs name (gpupool.io/output-metric), by result (ok, error: the job reports no output meanwhile).",
		}, []string{"result"}),
		cgroupErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_collector_cgroup_read_errors_total",
			Help: "Reads of a job's cgroup memory.events that failed for another reason than the cgroup being gone (its OOM kills are unknown meanwhile).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.samples, m.unattributed, m.batches, m.publishErrors, m.sampleErrors,
			m.publishDuration, m.batchBytes, m.tickDuration, m.attributionErrors, m.spooled, m.spoolDropped, m.spoolRecords,
			m.deadLettered, m.deadLetteredRows, m.outputScrapes, m.cgroupErrors)
	}
	return m
}
