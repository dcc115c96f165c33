// Package demo is `gpupool demo`: the whole pipeline in one process on a simulated
// fleet, on accelerated simulated time.
//
// In: the configuration file's settings (config.Config, with the demo's own
// defaults applied by Apply). Out: a simulated fleet (collector/sim) publishing
// through the embedded or configured NATS, ingest storing it in the embedded or
// configured ClickHouse, analyzer passes on simulated time (analyzer/clock, in
// lockstep with the fleet) publishing findings, gpupool's scheduler reading them
// off the bus and acting on them through the sim executor (loop.go; its decisions
// in the actions table), then a summary on the output: GPU-hours, utilisation,
// jobs, findings and cost, enforcement's effect measured from the stored data of
// a policies-off run (baseline.go, database <database>_baseline) and of this one
// (effect.go), simrun's fast benchmark, and whether any sample was lost.
// Progress goes to a status line while it runs. The database stays behind for
// `gpupool sql`.
//
// Like internal/config it is a composition root: it imports the components and
// nothing but cmd/gpupool imports it.
package demo
