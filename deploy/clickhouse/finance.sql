-- A read-only finance user that sees gpupool's finance views and nothing else.
-- Run once on the ClickHouse server as an administrator, after `gpupool migrate`,
-- replacing the passwords:
--
--   clickhouse-client --multiquery < deploy/clickhouse/finance.sql
--
-- and again after a migration that replaces views (0007 does): replacing a view
-- resets its SQL SECURITY to the default.
--
-- (on a cluster, add ON CLUSTER <name> to each statement, or use replicated access
-- storage). The objects granted are exactly those docs/finance.md documents; a test
-- (deploy/clickhouse/finance_test.go) keeps the two lists equal and runs the ALTERs
-- below on a migrated database.
--
-- Views normally run with the reading user's rights (SQL SECURITY INVOKER), which would
-- force granting the raw tables too. Making the finance views SQL SECURITY DEFINER lets
-- them read the tables with their definer's rights (the user running this script, who
-- must keep SELECT on the gpupool tables), so the role needs SELECT on the views only
-- (ClickHouse 24.4 or newer). The three tables granted, price_book,
-- chargeback_settings and chargeback_refreshes, are finance inputs and the refresh log.

CREATE ROLE IF NOT EXISTS gpupool_finance;

ALTER TABLE gpupool.price_book_current MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.price_timeline MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_daily MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_monthly MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.idle_cost MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.queue_wait MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.unallocated_capacity MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.unallocated_by_team MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.utilisation_distribution MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.capacity MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.gpu_daily MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_priced MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_job_priced MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_hourly_current MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_jobs MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.findings_open MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.job_failures MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.job_failures_between MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.failure_summary MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.job_output MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.job_output_between MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.output_summary MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.queue_wait_profile MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.off_peak MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.fragmentation_hourly MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.gpu_activity_hourly MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.gpu_activity_minutely MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.process_activity_minutely MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.gpu_state_between MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.gpu_state_recent MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.data_clock MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_version MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.finding_history MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.actions_log MODIFY SQL SECURITY DEFINER;

GRANT SELECT ON gpupool.price_book TO gpupool_finance;
GRANT SELECT ON gpupool.price_book_current TO gpupool_finance;
GRANT SELECT ON gpupool.price_timeline TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_daily TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_monthly TO gpupool_finance;
GRANT SELECT ON gpupool.idle_cost TO gpupool_finance;
GRANT SELECT ON gpupool.queue_wait TO gpupool_finance;
GRANT SELECT ON gpupool.unallocated_capacity TO gpupool_finance;
GRANT SELECT ON gpupool.unallocated_by_team TO gpupool_finance;
GRANT SELECT ON gpupool.utilisation_distribution TO gpupool_finance;
GRANT SELECT ON gpupool.capacity TO gpupool_finance;
GRANT SELECT ON gpupool.gpu_daily TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_priced TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_job_priced TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_hourly_current TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_jobs TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_refreshes TO gpupool_finance;
GRANT SELECT ON gpupool.findings_open TO gpupool_finance;
GRANT SELECT ON gpupool.job_failures TO gpupool_finance;
GRANT SELECT ON gpupool.job_failures_between TO gpupool_finance;
GRANT SELECT ON gpupool.failure_summary TO gpupool_finance;
GRANT SELECT ON gpupool.job_output TO gpupool_finance;
GRANT SELECT ON gpupool.job_output_between TO gpupool_finance;
GRANT SELECT ON gpupool.output_summary TO gpupool_finance;
GRANT SELECT ON gpupool.queue_wait_profile TO gpupool_finance;
GRANT SELECT ON gpupool.off_peak TO gpupool_finance;
GRANT SELECT ON gpupool.fragmentation_hourly TO gpupool_finance;
GRANT SELECT ON gpupool.gpu_activity_hourly TO gpupool_finance;
GRANT SELECT ON gpupool.gpu_activity_minutely TO gpupool_finance;
GRANT SELECT ON gpupool.process_activity_minutely TO gpupool_finance;
GRANT SELECT ON gpupool.gpu_state_between TO gpupool_finance;
GRANT SELECT ON gpupool.gpu_state_recent TO gpupool_finance;
GRANT SELECT ON gpupool.data_clock TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_version TO gpupool_finance;
GRANT SELECT ON gpupool.finding_history TO gpupool_finance;
GRANT SELECT ON gpupool.actions_log TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_settings TO gpupool_finance;

-- Reading finance: nothing but SELECT on the objects above, enforced twice (grants,
-- and readonly = 1 so not even a setting can be changed).
CREATE USER IF NOT EXISTS finance
    IDENTIFIED WITH sha256_password BY 'change-me'
    DEFAULT ROLE gpupool_finance
    SETTINGS readonly = 1;
GRANT gpupool_finance TO finance;

-- Whoever maintains prices: the finance views plus adding rows to the price book
-- (corrections and withdrawals are new rows too; docs/finance.md).
CREATE ROLE IF NOT EXISTS gpupool_pricing;
GRANT gpupool_finance TO gpupool_pricing;
GRANT INSERT ON gpupool.price_book TO gpupool_pricing;
-- and choosing how a shared GPU is split among its tenants (docs/finance.md).
GRANT INSERT ON gpupool.chargeback_settings TO gpupool_pricing;
-- `gpupool pricebook load` checks the schema is up to date before it writes;
-- `pricebook check` looks up the cards in use, hour by hour.
GRANT SELECT ON gpupool.schema_migrations TO gpupool_pricing;
GRANT SELECT ON gpupool.gpu_hour TO gpupool_pricing;
CREATE USER IF NOT EXISTS finance_admin
    IDENTIFIED WITH sha256_password BY 'change-me-too'
    DEFAULT ROLE gpupool_pricing;
GRANT gpupool_pricing TO finance_admin;
