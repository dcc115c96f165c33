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
//
// Access: a User is a credential (a public nkey) with Roles — collector, agent,
// ingest, analyzer, scheduler, alerter, streams, admin — and User.Permissions is
// what nats-server lets it publish and subscribe to: a collector its own node's
// samples and its cluster's job events, an agent its own node's commands, and so on
// (docs/bus-security.md has the table, which the tests run cell by cell).
// ServerConfig renders a nats-server configuration with those users and TLS; the
// embedded server applies the same users and TLS (EmbeddedConfig.Users, TLS), and
// connects its own process with an admin key held in memory. A client
// authenticates with ClientConfig.NKeyFile or CredsFile, and receives replies on
// its own inbox (InboxPrefix). StreamsConfig.Manage false leaves the streams to the
// credential with the streams role.
package bus
