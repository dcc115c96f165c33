-- 0007: unobserved GPU-hours — held time when the GPU sent no sample at all.
--
-- unmeasured_gpu_hours is held time with no activity measurement; its part in
-- minutes when the GPU reported nothing (its collector was down or never ran, a
-- job known only from its scheduler's events) is now unobserved_gpu_hours, so a
-- job without telemetry reads as unobserved, never as used or idle.
-- unobserved_gpu_hours <= unmeasured_gpu_hours, and still
-- gpu_hours = used_gpu_hours + idle_gpu_hours + unmeasured_gpu_hours.
--
-- The finance views keep every column they had, in the same order, and gain
-- unobserved_gpu_hours as their last column. Rows written before this
-- migration read 0 until the analyzer refreshes their hour again.
-- ADD COLUMN IF NOT EXISTS and CREATE OR REPLACE VIEW make it safe to run twice.

ALTER TABLE {{.DB}}.{{.Local "chargeback_hourly"}} {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS unobserved_gpu_hours Float64 DEFAULT 0 COMMENT 'the part of unmeasured_gpu_hours when the GPU sent no sample at all';

{{if .Cluster}}ALTER TABLE {{.DB}}.chargeback_hourly {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS unobserved_gpu_hours Float64 DEFAULT 0 COMMENT 'the part of unmeasured_gpu_hours when the GPU sent no sample at all';{{end}}

-- The view chargeback_hourly_current this migration (re)defined is now schemas/views/chargeback_hourly_current.sql, re-applied on every migrate.

-- The view chargeback_priced this migration (re)defined is now schemas/views/chargeback_priced.sql, re-applied on every migrate.

-- The view chargeback_daily this migration (re)defined is now schemas/views/chargeback_daily.sql, re-applied on every migrate.

-- The view chargeback_monthly this migration (re)defined is now schemas/views/chargeback_monthly.sql, re-applied on every migrate.
