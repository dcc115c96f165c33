// Package collector samples the GPUs and GPU processes of one node and publishes
// them to NATS JetStream.
//
// In: a Source (simulated fleet, replayed trace, DCGM or NVML) read once per tick.
// Out: one schemas.SampleBatch per tick on gpupool.samples.<cluster>.<node>,
// protobuf-encoded, published with a JetStream ack and a message ID
// (<collector id>-<seq>) so that a retried publish is stored once. A failed publish is
// retried with capped exponential backoff until it is acknowledged or the collector
// stops.
//
// Subpackages hold the sources: collector/sim is the simulated fleet.
package collector
