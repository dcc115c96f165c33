// Package findings is the waste-finding half of the analyzer: periodic passes over
// the store that find idle jobs, zombie processes, memory-bound jobs, jobs on the
// wrong card and long jobs at low utilisation, with the evidence, owner and cost of
// each, and keep each finding's lifecycle.
//
// In: a store holding gpu_samples, process_samples and the jobs view (migrations
// 0001–0002), a price book (Prices) and a pass time chosen by the caller. A pass
// reads the running jobs once, then runs the detectors concurrently; each is one
// query per group of pools sharing its thresholds, aggregating the window ending at
// the pass time in ClickHouse (counts, fractions and quantiles per GPU, merged per
// job) with the thresholds in the query. Go only joins the rows to their jobs and
// prices them. The hint detectors (memory_bound, wrong_card, low_util, compute_bound) run every
// Config.HintInterval rather than every pass.
//
// Out: finding versions (schemas.Finding) in the findings table (migration 0004;
// the findings_open view is the finance-facing one) and JSON events
// (schemas.EncodeFindingMessage) on gpupool.findings.<kind> (Subject) when a
// finding opens, escalates, changes or resolves. Units: activity
// figures are ratios 0..1, memory MiB, PCIe bytes/s, windows minutes, waste
// GPU-hours (a MIG instance counts slices / 7 of a GPU) and money in the price
// book's currency.
//
// Lifecycle: a problem keeps one id (kind + job, or kind + node + GPU + PID + job
// for a zombie). The first pass that sees it opens an episode; later passes that
// still see it write updated versions (last_seen, evidence and waste grow); once no
// pass has seen it for Config.ResolveAfter it is resolved, and if it comes back it
// opens a new episode under the same id. first_seen is the pass that opened the
// episode (so first_seen − condition start is the detection delay); since is the
// estimated start of the condition, from which waste is counted. A detector that
// fails or does not run in a pass leaves its kind's open findings as they are.
//
// The package never reads the wall clock: Run analyses the window ending at the
// time it is given, so a scheduler loop, the demo and a harness on simulated time
// drive it alike. The scoring harness (score_test.go) runs the simulated fleet
// through ingest's loader and scores the findings against the fleet's ground truth.
package findings
