// Package sim is a deterministic, seeded simulated GPU fleet: the telemetry source
// of gpupool's embedded demo and the ground truth the analyzer is scored against.
//
// In: a Config (seed, fleet shape, simulated start time, tick, target load).
//
// Out:
//   - Fleet.Advance(t) moves simulated time forward and returns the scheduler's job
//     events (submit, admit, start, end) that happened since the previous call, in
//     time order, as schemas.JobEvent with TimeMs in milliseconds since the epoch.
//   - Node.Sample (a collector.Source) appends one schemas.GPUSample per GPU or MIG
//     instance and one schemas.ProcessSample per GPU process at the last Advance
//     time. Units follow the trace format: ratios 0..1, memory MiB, power W, energy
//     mJ (a counter integrated from power over sample intervals), PCIe bytes/s,
//     temperature °C.
//   - Fleet.Truth lists the waste the simulation planted (idle, zombie,
//     memory_bound, wrong_card, low_util, compute_bound; with Config.RealFleet also hung and
//     memory_capacity, idle tenants of time-sliced GPUs, bursty small jobs and
//     zombies under a new job) with the job, GPUs and interval of each, so an
//     analyzer's findings can be scored. A time-sliced GPU is two slots with one
//     UUID: each tenant's process reports its own activity, the GPU row their sum.
//   - Fleet.Stop, Fleet.Requeue and Fleet.Kill are the executor side: the scheduler
//     ends a job, stops one and queues the rest of its work again as its next
//     attempt (keeping its place in line: preempted end, then submit and requeue
//     events with attempt+1 and rerun_of; an idle notebook's only when its owner
//     comes back), or kills a leftover process, and the
//     events, samples and truth follow. Fleet.Holding is the truth that holds now.
//   - Driver runs a Fleet into NATS on an accelerated clock: per tick it
//     advances the fleet, publishes its job events through a bus.JobPublisher and
//     runs one collector.Collector per simulated node (the demo and
//     `gpupool collector --source sim`).
//
// The fleet is a discrete-event simulation: job arrivals, ends, leftover processes
// and stray processes are events on a heap, and a small scheduler places queued
// jobs on free GPUs of the requested card type whenever something changes. Every
// job's behaviour (phases, failure, leak) is drawn when it is created, so truth
// intervals are known exactly. Arrivals (jobs, stray processes) come from their
// own random stream and what follows a job's end from the job's own, so the
// workload of a seed is the same whatever an executor does to the fleet: runs
// with and without enforcement can be compared. Sample draws per-tick noise from a stream derived from
// seed, node and sample time only, so nodes can be sampled concurrently and a given
// Config always yields the same events and samples.
package sim
