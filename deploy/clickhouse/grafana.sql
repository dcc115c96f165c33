-- A read-only user for Grafana's ClickHouse datasource (deploy/grafana): SELECT on
-- the gpupool database, readonly = 1, and max_execution_time left changeable because
-- the plugin (through clickhouse-go) sets it on every query. Run once as an
-- administrator after `gpupool migrate`, replacing the password:
--
--   clickhouse-client --multiquery < deploy/clickhouse/grafana.sql

CREATE SETTINGS PROFILE IF NOT EXISTS gpupool_grafana
    SETTINGS readonly = 1, max_execution_time = 60 CHANGEABLE_IN_READONLY;
CREATE ROLE IF NOT EXISTS gpupool_grafana;
GRANT SELECT ON gpupool.* TO gpupool_grafana;
CREATE USER IF NOT EXISTS grafana
    IDENTIFIED WITH sha256_password BY 'change-me'
    DEFAULT ROLE gpupool_grafana
    SETTINGS PROFILE 'gpupool_grafana';
GRANT gpupool_grafana TO grafana;
