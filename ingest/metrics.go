package ingest

import "github.com/prometheus/client_golang/prometheus"

// Metrics are ingest's Prometheus metrics.
type Metrics struct {
	messages     *prometheus.CounterVec
	rows         *prometheus.CounterVec
	batches      *prometheus.CounterVec
	batchRows    *prometheus.HistogramVec
	batchBytes   *prometheus.HistogramVec
	insertDur    *prometheus.HistogramVec
	retries      *prometheus.CounterVec
	deadLetters  *prometheus.CounterVec
	redelivered  *prometheus.CounterVec
	dedupHits    *prometheus.CounterVec
	recovered    *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	beaten       *prometheus.CounterVec
	pending      *prometheus.GaugeVec
	ackPending   *prometheus.GaugeVec
	lagSeconds   *prometheus.GaugeVec
	intentsAlive *prometheus.GaugeVec
	duplicates   *prometheus.CounterVec
}

// NewMetrics creates ingest metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	kind := []string{"kind"}
	table := []string{"table"}
	m := &Metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_messages_total", Help: "Messages received from JetStream, by stream kind (samples, jobs).",
		}, kind),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_rows_inserted_total", Help: "Rows committed to the store, by table.",
		}, table),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_batches_total", Help: "Batches committed to the store.",
		}, kind),
		batchRows: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gpupool_ingest_batch_rows", Help: "Rows per committed batch.",
			Buckets: prometheus.ExponentialBuckets(10, 4, 9),
		}, kind),
		batchBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gpupool_ingest_batch_message_bytes", Help: "Message bytes per committed batch.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 10),
		}, kind),
		insertDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gpupool_ingest_insert_duration_seconds", Help: "Time of one successful insert into the store.",
			Buckets: prometheus.ExponentialBuckets(0.001, 3, 10),
		}, table),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_insert_retries_total", Help: "Inserts that failed and were retried.",
		}, table),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_dead_letters_total", Help: "Messages moved to the dead-letter stream, by reason (malformed, schema_version, invalid_value, invalid_identifier, past_retention, subject_mismatch, source_not_allowed, identity_changed).",
		}, []string{"kind", "reason"}),
		redelivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_redelivered_messages_total", Help: "Messages JetStream delivered more than once.",
		}, kind),
		dedupHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_dedup_hits_total", Help: "Redelivered messages found in an already recorded batch (not inserted again).",
		}, kind),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_recovered_batches_total", Help: "Interrupted batches rebuilt from the stream and re-inserted under their original tokens.",
		}, kind),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_stale_batches_total", Help: "Batches abandoned before insert because they were held too close to ack_wait (JetStream redelivers them).",
		}, kind),
		beaten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_beaten_batches_total", Help: "Batches not inserted because an older batch holds some of their messages (or they were acknowledged already); their messages are handed back and found in that batch.",
		}, kind),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_ingest_consumer_pending_messages", Help: "Messages in the stream not yet delivered to ingest (consumer lag).",
		}, kind),
		ackPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_ingest_consumer_ack_pending_messages", Help: "Messages delivered to ingest and not yet acknowledged.",
		}, kind),
		lagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_ingest_consumer_lag_seconds", Help: "Age of the oldest message not yet acknowledged.",
		}, kind),
		intentsAlive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpupool_ingest_intents", Help: "Batch intents still recorded (in flight or awaiting the ack floor).",
		}, kind),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_ingest_duplicate_rows_total", Help: "Rows not stored because a row with the same content key was stored already or is in the same batch (sent twice under different message IDs), by table.",
		}, table),
	}
	if reg != nil {
		reg.MustRegister(m.messages, m.rows, m.batches, m.batchRows, m.batchBytes, m.insertDur, m.retries,
			m.deadLetters, m.redelivered, m.dedupHits, m.recovered, m.dropped, m.beaten, m.pending, m.ackPending,
			m.lagSeconds, m.intentsAlive, m.duplicates)
	}
	return m
}
