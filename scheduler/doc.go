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
// What lives where. The admission engine — model and its validation, jobs,
// quotas, admission, placement, reservations, reclaim and preemption, the jobs'
// saved state — is package scheduler/engine, pure (no I/O, no clock); its names
// are re-exported here (aliases.go: Engine, Model, Job, JobSpec, the states and
// decision kinds, the errors, NewEngine, DefaultModel). This package is the
// Service that drives it: its lock and passes, policies and findings, executors
// and their orders, the audit trail, job events, notifications, ownership
// checks, idempotency, metrics, and the state file and its journal.
//
// Policies map a finding kind in some pools to steps (notify, reclaim, cancel,
// kill, recommend) after delays; each policy may be dry-run, rate-limited per
// pool and skipped by opt-out labels. A step is taken once per finding occurrence:
// the steps taken are read back from the audit trail at start.
package scheduler
