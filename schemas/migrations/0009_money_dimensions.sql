-- 0009: every cost in money, the cluster and model dimensions, and a capacity view
-- that stops at the last refreshed hour.
--
-- Money (docs/finance.md, "Energy and queue-wait cost"):
-- * Energy is priced per kWh per cluster from the price book: a row whose card is
--   energy:<cluster> (e.g. energy:eu-west) holds the price of one kWh in its
--   price_per_gpu_hour column, with the same validity rules as a card's price
--   (the price of an hour is the row in effect at the hour's start). A cluster
--   with no such row has energy_cost NULL, never 0.
-- * Queue wait is priced as an opportunity cost: what the GPUs a job asked for
--   would have cost for the time it waited. A row whose card is queue-wait:<pool>
--   sets the price of a waiting GPU-hour in that pool; without one, the waiting
--   GPU-hour costs the price of the card the job ran on, at the hour it started.
--   The cost is charged once per attempt, in the hour it started, like
--   queue_wait_hours.
--
-- unobserved_gpu_hours (0007) keeps its place after idle_cost / energy_kwh; the new
-- columns follow it.
--
-- Dimensions: chargeback_daily, chargeback_monthly, idle_cost and capacity gain a
-- cluster column (last, so that SELECT * readers keep their columns in place);
-- utilisation_distribution gains the dimensions model and cluster.
--
-- The views are replaced (CREATE OR REPLACE keeps the migration idempotent); their
-- existing columns keep their names, types and order. Re-run
-- deploy/clickhouse/finance.sql after this migration: replacing a view resets its
-- SQL SECURITY.

-- The view chargeback_priced this migration (re)defined is now schemas/views/chargeback_priced.sql, re-applied on every migrate.

-- The view chargeback_daily this migration (re)defined is now schemas/views/chargeback_daily.sql, re-applied on every migrate.

-- The view chargeback_monthly this migration (re)defined is now schemas/views/chargeback_monthly.sql, re-applied on every migrate.

-- The view idle_cost this migration (re)defined is now schemas/views/idle_cost.sql, re-applied on every migrate.

-- queue_wait prices each job's wait like chargeback_priced, at the hour it started
-- (or at the current hour while it waits): queue-wait:<pool> when the price book
-- has it, else the requested card's price (NULL when the job asked for any card).
-- The view queue_wait this migration (re)defined is now schemas/views/queue_wait.sql, re-applied on every migrate.

-- The view utilisation_distribution this migration (re)defined is now schemas/views/utilisation_distribution.sql, re-applied on every migrate.

-- capacity: every row is cut at the last hour its cluster's GPUs reported a sample
-- (a job with no cluster: the last hour any GPU reported). Before, a job still
-- queued was counted up to now while capacity, which comes from samples, stopped
-- at the last sample: capacity 0 with demand, an artefact of missing data.
-- The view capacity this migration (re)defined is now schemas/views/capacity.sql, re-applied on every migrate.
