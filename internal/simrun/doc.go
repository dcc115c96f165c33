// Package simrun measures what enforcement is worth on the simulated fleet: it
// runs collector/sim for a stretch of simulated time twice with the same seed —
// once as is, once with the scheduler's policies acting on it through the sim
// executor — and reports the fleet's utilisation and queue waits for each.
//
// What is measured, exactly: the fleet places its own jobs (its own queue and
// backfilling placement, not the scheduler's admission engine); the scheduler
// acts only through its policies, fed with findings drawn from the fleet's
// ground truth as a perfect analyzer would report them (an idle job once it has
// been idle for the analyzer's window, a zombie process once seen). Idle dev jobs
// are notified and, after the grace, reclaimed and requeued (an idle notebook
// when its owner comes back, at the end of its idle stretch); zombie and stray
// processes are killed.
//
// Out (Report): GPU-hours of capacity, allocated to jobs, idle while allocated
// (the truth's idle intervals) and held by zombie processes; utilisation (allocated
// / capacity), goodput (allocated − idle) and effective utilisation (goodput /
// capacity); queue waits (submit to start, of the scheduler-known attempts that
// waited — new jobs and reruns — apart from the requeued attempts'; jobs still
// queued at the end count with the wait so far); and the actions taken.
package simrun
