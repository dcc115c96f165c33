// Package ingest moves batches from NATS JetStream into the store, exactly once in
// effect.
//
// In: the GPUPOOL_SAMPLES stream (schemas.SampleBatch) and the GPUPOOL_JOBS stream
// (schemas.JobEventBatch), read through durable pull consumers that any number of
// ingest processes may share. Out: rows in gpu_samples, process_samples and
// job_events; undecodable or invalid messages on gpupool.deadletter.<kind> with the
// reason in the Gpupool-Error header. Measurements are stored at their source's
// precision (schemas.RatioStep and the others): ratios to 1/512, power to ¼ W,
// temperature to 1 °C, PCIe byte rates to ±0.4 %; the noise below that is what
// makes full-precision floats expensive on disk.
//
// Messages are gathered into large inserts (by rows and by age) and acknowledged only
// after the store committed them. Redelivery cannot double-count:
//
//  1. Before inserting, ingest records an intent in a JetStream key-value bucket:
//     the stream sequences of the batch's messages, under a key naming the batch.
//  2. Each table's insert carries a deduplication token derived from that key, so
//     ClickHouse drops a repeat of the same insert.
//  3. After the insert, the intent is marked committed and the messages acked.
//  4. A message delivered more than once is looked up in the intents first: if its
//     batch was committed it is only acked; if the batch was still pending (the
//     process died mid-insert), the whole batch is rebuilt from the stream by
//     sequence and inserted again with the same tokens — a no-op where the first
//     insert had landed.
//  5. Two different batches can still hold one message: it was redelivered while
//     its first batch's intent was being written (a write held through a leader
//     election can outlast ack_wait), or a lookup missed an intent written a moment
//     before. So after writing its intent, and before recovering another's, ingest
//     lists the bucket again: of the intents holding a message only the oldest
//     (lowest bucket revision) is ever inserted; a younger one is marked aborted and
//     its messages handed back, to be found in the older batch on redelivery. A batch
//     holding a message at or below the consumer's ack floor (read after that
//     listing) is aborted as well: that message was settled already, and its intent
//     may have been pruned.
//  6. Intents whose messages have all been below the ack floor for 2 × ack_wait are
//     deleted: those are not delivered again (the wait covers an acknowledgement a
//     consumer leader lost in an election). The floor is also recorded in the bucket,
//     so a consumer lost with its servers is made again after it rather than from
//     the stream's start, and its first deliveries are looked up like redeliveries.
//
// Limits: ClickHouse remembers the last non_replicated_deduplication_window (or
// replicated_deduplication_window) tokens per table; an interrupted batch replayed
// after more inserts than that would be inserted again. Intents expire after
// Config.IntentTTL as a last resort.
package ingest
