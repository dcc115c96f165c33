-- A read-only finance user that sees gpupool's finance views and nothing else.
-- Run once on the ClickHouse server (or ON CLUSTER) as an administrator, after
-- `gpupool migrate`, replacing the password:
--
--   clickhouse-client --multiquery < deploy/clickhouse/finance.sql
--
-- Views normally run with the reading user's rights (SQL SECURITY INVOKER), which would
-- force granting the raw tables too. Making the finance views SQL SECURITY DEFINER lets
-- them read the tables with their definer's rights, so the role needs SELECT on the views
-- only (ClickHouse 24.4 or newer).

CREATE ROLE IF NOT EXISTS gpupool_finance;

ALTER TABLE gpupool.chargeback_daily MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.chargeback_monthly MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.idle_cost MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.queue_wait MODIFY SQL SECURITY DEFINER;
ALTER TABLE gpupool.findings_open MODIFY SQL SECURITY DEFINER;

GRANT SELECT ON gpupool.chargeback_daily TO gpupool_finance;
GRANT SELECT ON gpupool.chargeback_monthly TO gpupool_finance;
GRANT SELECT ON gpupool.idle_cost TO gpupool_finance;
GRANT SELECT ON gpupool.queue_wait TO gpupool_finance;
GRANT SELECT ON gpupool.findings_open TO gpupool_finance;
GRANT SELECT ON gpupool.price_book TO gpupool_finance;

-- Reading finance: nothing but SELECT on the views above, enforced twice (grants, and
-- readonly = 1 so not even a setting can be changed).
CREATE USER IF NOT EXISTS finance
    IDENTIFIED WITH sha256_password BY 'change-me'
    DEFAULT ROLE gpupool_finance
    SETTINGS readonly = 1;
GRANT gpupool_finance TO finance;

-- Whoever maintains prices: the finance views plus adding rows to the price book.
CREATE ROLE IF NOT EXISTS gpupool_pricing;
GRANT gpupool_finance TO gpupool_pricing;
GRANT INSERT ON gpupool.price_book TO gpupool_pricing;
CREATE USER IF NOT EXISTS finance_admin
    IDENTIFIED WITH sha256_password BY 'change-me-too'
    DEFAULT ROLE gpupool_pricing;
GRANT gpupool_pricing TO finance_admin;
