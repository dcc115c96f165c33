// Package scheduler governs the pool: it admits jobs to GPUs by queue, quota and
// priority, lends idle quota and takes it back, and turns the analyzer's findings
// into actions by policy — every decision audited, dry-run first, protected pools
// never touched.
//
// In:
//   - a Model (Config's cards, clusters, pools, priority classes, queues) — the
//     YAML under scheduler: in gpupool's configuration, validated with errors that
//     name the field, e.g. "queues[2].quota.H100-80GB: no such card type";
//   - jobs (JobSpec: team, project, queue, GPUs of a card type or of any card with
//     ≥ N GiB, priority class, preemptible, checkpointable, workload, labels);
//   - findings (schemas.Finding: idle, zombie, wrong_card, … with the job, node, PID and
//     since when), from a FindingSource or pushed;
//   - a clock: the Engine takes the time of every call and reads none itself.
//
// Out:
//   - decisions: admit, borrow, reclaim, preempt, requeue, expire, stop, notify,
//     kill, cancel, recommend, skip (with why), reject — one audit row each
//     (Action, the actions table) through a Recorder; and for calls whose context
//     carries an actor (ContextWithActor: the API's caller), the changes they ask
//     for — submit, finish, push — with that actor;
//   - job events (schemas.JobEvent: submit, admit, start, preempt, requeue, end)
//     of the scheduler's own jobs through a Publisher, each attempt its own key,
//     so chargeback sees queue waits and reruns;
//   - stops, kills and resumes carried out by an executor.Executor (sim, agent,
//     kubernetes, slurm; Config.Executor lists them, cmd/gpupool builds them),
//     one per job source; a job is shown as moved only once its executor has
//     confirmed the stop. A refusal (executor.ErrUnsupported) is recorded once as
//     skipped and not asked again; a failure is retried with backoff (Retry.Attempts
//     calls a round, failedRounds rounds further and further apart), then reported
//     failed for good. A job an executor suspended or held when it was requeued is
//     resumed by that executor when it is admitted again (a resume row);
//   - with WithStateFile, the queued and running jobs in a JSON file rewritten
//     (atomically) when they change and read back at start.
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
//
// Policies map a finding kind in some pools to steps (notify, reclaim, cancel,
// kill, recommend) after delays; each policy may be dry-run, rate-limited per
// pool and skipped by opt-out labels. A step is taken once per finding occurrence:
// the steps taken are read back from the audit trail at start.
package scheduler
