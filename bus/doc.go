// Package bus connects gpupool's components to NATS JetStream: it starts the embedded
// server (the one-machine default), connects to an external cluster, creates the
// streams idempotently and names the subjects.
//
// It also holds the one job-event publisher every producer shares (the collector,
// the simulated fleet and replayed traces, the scheduler): JobPublisher takes
// []schemas.JobEvent and sends one schemas.JobEventBatch per cluster through a
// Sender (JetStreamSender, or the collector's spooling outbox), with the message ID
// <producer>-<seq> so a batch sent again is stored once, retried under Backoff,
// gpupool's one publish retry policy (exponential with a cap, until ctx ends).
//
// Subjects:
//
//	gpupool.samples.<cluster>.<node>   sample batches (schemas.SampleBatch, protobuf)
//	gpupool.jobs.<cluster>             job events (schemas.JobEventBatch, protobuf)
//	gpupool.deadletter.<kind>          messages ingest could not store, with the reason
//
// Cluster and node names are sanitised into single subject tokens; the message body
// carries the real names.
package bus
