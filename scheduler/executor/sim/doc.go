// Package sim is the executor for the simulated fleet (collector/sim) that the
// embedded demo runs: the scheduler's stops, requeues and kills become the fleet's
// Stop, Requeue and Kill, and the fleet's job events, samples and truth follow.
//
// In: executor.Target (job key; node and PID for a kill). Out: an executor.Outcome,
// or executor.ErrNotFound when the fleet has no such running job or leftover
// process. A requeued job is resubmitted by the fleet itself, keeping its place,
// so Resume has nothing to do.
package sim
