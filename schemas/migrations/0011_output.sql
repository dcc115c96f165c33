-- 0011: what jobs produced, per GPU-hour and per unit of cost.
--
-- A job reports its output on any of its events (its launcher, typically on the end
-- event) with two labels: gpupool.io/output-units, a decimal count, and
-- gpupool.io/output-unit, what was counted (tokens, samples, requests, steps). The
-- latest report wins, so a launcher may post running totals. A job that reports
-- nothing has output_units NULL, and every figure built on it is NULL (shown as
-- "—"), never 0.
--
-- cost_per_units prices a scale of units that reads well: per 1,000,000 tokens, per
-- 1,000 samples or requests, per 1 of anything else (per_units says which).

-- The view job_output this migration (re)defined is now schemas/views/job_output.sql, re-applied on every migrate.

-- The view output_summary this migration (re)defined is now schemas/views/output_summary.sql, re-applied on every migrate.
