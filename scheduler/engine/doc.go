// Package engine is the scheduler's admission engine: the model (cards,
// clusters and their nodes, pools, priority classes, queues) and its
// validation, jobs and their states, quotas and cohorts, admission, placement
// on nodes with reservations and backfill, reclaim and preemption, and the
// jobs' saved state. The scheduler package (the Service) drives it; it re-exports
// these names (scheduler.Engine = engine.Engine, scheduler.Job, …), so that
// importers of the scheduler need not know this package.
//
// In:
//   - a Model, validated by Model.Validate one section after another (nodes and
//     placement, cards, clusters, pools, priority classes, queues, quotas
//     against pools), each error naming its field, e.g.
//     "queues[2].quota.H100-80GB: no such card type";
//   - jobs (JobSpec) submitted, finished, requeued, resumed; the outcome of the
//     stops it ordered (Confirm, KeepRunning, StopFailed);
//   - a clock: every method takes the time it runs at (now), and nothing here
//     reads a clock, sleeps, or does I/O.
//
// Out:
//   - Decisions from Schedule (admit, reclaim, preempt, expire, requeue, stop,
//     wait, skip): orders for the caller, who carries them out through an
//     executor and records them;
//   - jobs and queues as they stand (Job, Jobs, Queues, Reserved);
//   - the jobs' saved state: SavedJob (a job with the bookkeeping its JSON leaves
//     out), TakeDirty (the jobs changed since the last call), Saved (all) and
//     Restore. Writing them — a snapshot and a journal — is the scheduler's.
//
// Not here: the Service, its lock, policies and findings, executors, the audit
// trail, job events, metrics, idempotency and the state file (package
// scheduler); where jobs fit on nodes, the placer itself (scheduler/placement).
// TestEnginePure holds the engine to its imports (the standard library's pure
// helpers, schemas, scheduler/placement, and scheduler/executor for
// executor.Target, a value naming a job in its own system) and to no clock
// reads. An Engine is not safe for concurrent use: the Service serialises calls.
//
// Model. Cards have a memory size and a rank (cost). Clusters hold GPUs per card
// type; a job runs in one cluster and admission never exceeds a cluster's cards.
// Pools (experimental training, production training, online inference, batch
// inference, dev/test) carry the rules: may lend, may borrow, preemptible,
// protected, maximum job duration, reclaim grace. Queues sit in a pool with a
// nominal quota per card type (guaranteed), a borrowing limit and a lending limit,
// a cohort of queues that lend each other idle quota, and a fair-sharing weight —
// Kueue's ClusterQueues and cohorts, Volcano's guarantee (nominal) and capability
// (nominal + borrowing limit).
//
// Admission (Engine.Schedule), in units of GPUs:
//   - order: priority, then the queue's dominant share (its largest fraction of
//     any card type's capacity) over its weight, then submission order;
//   - a job fits on a card type when its queue stays within nominal + borrowing
//     limit, its cohort still lends at least what its queues borrow
//     (Σ max(0, used−nominal) ≤ Σ min(lending limit, max(0, nominal−used))), and
//     some cluster has the GPUs free; card types are tried cheapest first, so a
//     small job takes a big card only when no fitting smaller one is free;
//   - a job that fits its nominal quota but finds it lent out reclaims it: jobs of
//     borrowing queues in its cohort are stopped, lowest priority first, then most
//     recently admitted, the fewest that make it fit; lower-priority jobs of its
//     own queue may be preempted the same way. Checkpointable jobs get their
//     pool's reclaim grace (so do policy reclaims). Stopped jobs are requeued as
//     their next attempt at the place they had (their priority and original
//     submission order).
//   - never preempted: jobs of a protected or non-preemptible pool, jobs that say
//     preemptible: false, and inference jobs when the job wanting room is
//     training.
package engine
