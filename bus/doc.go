// Package bus connects gpupool's components to NATS JetStream: it starts the embedded
// server (the one-machine default), connects to an external cluster, creates the
// streams idempotently and names the subjects.
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
