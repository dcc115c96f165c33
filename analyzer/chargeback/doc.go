// Package chargeback bills every GPU-hour to the job attempt, team, project, model
// and pool that held it, at the price finance sets per card type, and keeps the
// finance views of migration 0003 (docs/finance.md) filled.
//
// In: a store holding the raw tables (gpu_samples, process_samples, job_events),
// the rollups ingest writes with each batch (gpu_minute, gpu_hour, process_minute;
// ingest.RollUpLoaded for samples loaded another way), the jobs view and the
// price_book finance maintains (package pricebook reads, loads, checks
// and looks it up).
//
// Out:
//   - Compute: one Row per job attempt and card type for any period, live from
//     the rollups: GPU-hours held (a MIG instance weighs its compute slices / 7,
//     a GPU held by several attempts at once is split by their memory share, or
//     activity share per chargeback_settings), split into used, idle and
//     unmeasured, a shared GPU's tenant by its own processes' activity; cost, idle cost and the cost of
//     failed attempts that were rerun, in the price book's currency; queue wait
//     hours; energy in kWh. ComputeUnallocated: the GPU time no job held.
//   - Refresh: writes closed hours into chargeback_hourly, the table behind
//     chargeback_daily, chargeback_monthly, idle_cost, unallocated_capacity,
//     utilisation_distribution, capacity and the other finance views. The
//     analyzer calls it every pass.
//   - RawDailyQuery: the one SQL query that recomputes chargeback_daily from the
//     raw tables alone, printed in docs/finance.md.
//
// Units: hours are GPU-hours unless named otherwise (queue wait is in hours of
// the attempt), money is in the price book's currency per GPU-hour, energy is
// kWh, activity ratios are 0..1, times are UTC. Costs are never silently zero:
// GPU-hours without a price are reported as unpriced and their cost is nil.
//
// Every figure comes from one SQL text (core.go) rendered over the rollups or
// over the raw tables, so the views, Compute and the documented raw query agree
// by construction; tests check they do, on a hand-built fleet with known answers
// and on a simulated day.
package chargeback
