-- 0018: the failures and the output of the attempts that ended in a period,
-- computed for them alone.
--
-- job_failures classifies every ended attempt, reading its end event, the
-- scheduler's decisions, its GPUs' XIDs and its priced chargeback rows, and
-- job_output reads every attempt's output labels and chargeback rows: a report of
-- one day read them whole (all of the store's attempts, all its history) to keep a
-- day's. Two parameterised views read each source for the attempts whose end_time
-- is in [from, to) only:
--
--   job_failures_between(from, to): job_failures' rows of those attempts. The
--     classification is written here once: job_failures is this view over all
--     time, with the same columns and rows as 0017's (the text is 0017's with the
--     period's filters).
--   job_output_between(from, to): job_output's rows of those attempts (job_output
--     also lists running ones, and keeps 0012's text).
--
--   SELECT reason, count() FROM job_failures_between(from = '2026-11-30 00:00:00', to = '2026-12-01 00:00:00') GROUP BY reason
--
-- An attempt that ended in the period has its last end or preempt event in it, so
-- the attempts whose such an event falls in the period are a superset that
-- narrows every source; the period's bound on end_time makes it exact.
-- CREATE OR REPLACE keeps the views' names; re-run deploy/clickhouse/finance.sql
-- afterwards (replacing a view resets its SQL SECURITY).

-- The view job_failures_between this migration (re)defined is now schemas/views/job_failures_between.sql, re-applied on every migrate.

-- The view job_failures this migration (re)defined is now schemas/views/job_failures.sql, re-applied on every migrate.

-- The view job_output_between this migration (re)defined is now schemas/views/job_output_between.sql, re-applied on every migrate.
