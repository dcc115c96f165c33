// Package collector samples the GPUs and GPU processes of one node and publishes
// them to NATS JetStream.
//
// In: a Source (simulated fleet, replayed trace, DCGM or NVML) read once per tick.
// Out: one schemas.SampleBatch per tick on gpupool.samples.<cluster>.<node>,
// protobuf-encoded, published with a JetStream ack and a message ID
// (<collector id>-<seq>) so that a retried publish is stored once. A failed publish is
// retried with capped exponential backoff (bus.Backoff) until it is acknowledged or
// the collector stops; with a spool configured, it is spooled to disk instead and
// sent once NATS answers. Job events the collector learns from attribution go out
// through a bus.JobPublisher over the same outbox, on gpupool.jobs.<cluster>.
//
// Subpackages hold the sources: collector/gpu opens DCGM (collector/dcgm) or NVML
// (collector/nvml) on a real node; collector/sim is the simulated fleet and its
// Driver, collector/replay plays a trace through collectors.
package collector
