// Package capacity forecasts GPU demand and capacity and answers the planner's
// question: how many more cards of a type keep the p95 queue wait under a target,
// and what they cost.
//
// In: the capacity view (migration 0007: per hour, cluster and card type, the GPUs
// there, running and queued, each an average over the hour) and the price book.
// Out: per cluster and card type, a forecast of capacity and demand for the next
// weeks (hourly, GPUs), the forecast's backtest error on the stored history, the
// p95 queue wait the forecast demand would see, and the extra GPUs that bring it
// under a target with their cost per month (in the price book's currency).
//
// The method (docs/capacity.md):
//   - Forecast: additive linear trend + hour-of-week seasonality,
//     ŷ(t) = a + b·t + s[how(t)] (168 slots, Monday 00:00 UTC first, summing to
//     0), clamped at 0, fitted by least squares with backfitting: the line
//     through what the season leaves, then the season (mean per slot) of what
//     the line leaves, repeated. It needs at least two weeks of history.
//   - Backtest: fit on all but the last week, forecast that week, and report the
//     weighted absolute percentage error WAPE = Σ|y − ŷ| / Σy, beside the
//     seasonal-naive forecast's (the same hour a week before) as the baseline.
//   - Wait: a fluid FIFO queue. New work per hour is what ran plus the growth of
//     the backlog, w(h) = running(h) + queued(h) − queued(h−1) (GPU-hours, at
//     least 0). With c usable GPUs the backlog is B(h) = max(0, B(h−1) + w(h) − c),
//     and work arriving at h waits B(h) / c hours (the backlog ahead of it drains
//     at c). Usable GPUs are the GPUs there times the highest share of them the
//     history ever kept running (fragmentation, quotas and MIG leave some idle).
//     The p95 wait is weighted by the work arriving.
//   - Plan: the least number of extra GPUs (whole cards) for which the p95 wait of
//     the forecast work stays at or under the target; its cost is that many GPUs at
//     the card's current price for 730 hours a month.
package capacity
