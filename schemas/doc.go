// Package schemas is gpupool's shared contract: the Go types of what collectors
// measure (GPU samples, process samples) and what schedulers report (job events), their
// wire encoding on NATS, and the ClickHouse schema as versioned migrations.
//
// It also holds the finding contract: the Finding the analyzer writes and the
// scheduler acts on, its kinds, states and severities, the lifecycle events on
// gpupool.findings.<kind> and the scheduler's Notice on gpupool.alerts.<team>, as
// JSON (EncodeFindingMessage, DecodeFindingMessage).
//
// It imports nothing else from this module, so every component can depend on it.
//
// Units follow the public trace format (TRACE_FORMAT.md): times are milliseconds since
// the Unix epoch (UTC), ratios are 0..1, memory is MiB, power is watts, energy is
// millijoules (a counter). A float32 field that the source did not report holds NaN
// (see Missing); it is stored as NULL.
package schemas
