// Package scheduler will govern the pool: pools per card type, queues and quotas with
// borrowing, fair admission, and policy actions (notify, reclaim, requeue) driven by
// the analyzer's findings, audited and with dry-run.
//
// Not built yet: today the simulated fleet (collector/sim) places its own jobs. This
// package exists so the folder layout shows where that work goes.
package scheduler
