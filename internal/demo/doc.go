// Package demo is `gpupool demo`: the whole pipeline in one process on a simulated
// fleet, on accelerated simulated time.
//
// In: the configuration file's settings (config.Config, with the demo's own
// defaults applied by Apply). Out: a simulated fleet (collector/sim) publishing
// through the embedded or configured NATS, ingest storing it in the embedded or
// configured ClickHouse, analyzer passes on simulated time (analyzer/clock)
// publishing findings, then a summary on the output: GPU-hours, utilisation,
// jobs, findings and cost, the scheduler's effect and whether any sample was lost.
// Progress goes to a status line while it runs. The database stays behind for
// `gpupool sql`.
//
// Like internal/config it is a composition root: it imports the components and
// nothing but cmd/gpupool imports it.
package demo
