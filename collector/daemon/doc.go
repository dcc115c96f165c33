// Package daemon is `gpupool collector` as a component: the collector section of
// the configuration file, and the wiring that picks the source and runs it.
//
// In: Config (where samples come from — DCGM, else NVML, on a GPU node; a
// simulated fleet or a recorded trace as load generators — plus attribution, the
// spool, the recording and the node agent) and a bus connection. Out: sample
// batches and job events published to JetStream until ctx ends (or, for a trace,
// until it ends), and, with agent.public_key_file (or agent.secret_file), reclaim
// commands for this node carried out. A real source never falls back to a
// simulation: with no GPU telemetry the error says what was tried.
package daemon
