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

CREATE OR REPLACE VIEW {{.DB}}.chargeback_hourly_current {{.OnCluster}} AS
SELECT
    h.hour AS hour, h.gpu_uuid AS gpu_uuid, h.job AS job, h.cluster AS cluster, h.node AS node,
    h.card AS card, h.mig_profile AS mig_profile, h.gpu_weight AS gpu_weight,
    h.gpu_hours AS gpu_hours, h.used_gpu_hours AS used_gpu_hours, h.idle_gpu_hours AS idle_gpu_hours,
    h.unmeasured_gpu_hours AS unmeasured_gpu_hours, h.energy_kwh AS energy_kwh,
    h.sm_active_mean AS sm_active_mean, h.gr_engine_active_mean AS gr_engine_active_mean,
    h.queue_wait_hours AS queue_wait_hours, h.unobserved_gpu_hours AS unobserved_gpu_hours
FROM {{.DB}}.chargeback_hourly AS h
WHERE (h.hour, h.generation) GLOBAL IN (
    SELECT r.hour, argMax(r.generation, r.refreshed_at) FROM {{.DB}}.chargeback_refreshes AS r GROUP BY r.hour
);

CREATE OR REPLACE VIEW {{.DB}}.chargeback_priced {{.OnCluster}} AS
SELECT
    h.hour AS hour, h.job AS job, h.gpu_uuid AS gpu_uuid, h.cluster AS cluster, h.node AS node,
    h.card AS card, h.mig_profile AS mig_profile, h.gpu_weight AS gpu_weight,
    j.team AS team, j.project AS project, j.pool AS pool, j.model_name AS model_name,
    j.status AS status, j.attempt AS attempt, j.failed_rerun AS failed_rerun,
    h.gpu_hours AS gpu_hours, h.used_gpu_hours AS used_gpu_hours, h.idle_gpu_hours AS idle_gpu_hours,
    h.unmeasured_gpu_hours AS unmeasured_gpu_hours, h.energy_kwh AS energy_kwh,
    h.queue_wait_hours AS queue_wait_hours, h.sm_active_mean AS sm_active_mean,
    h.gr_engine_active_mean AS gr_engine_active_mean,
    toUInt8(ifNull(p.valid_to > h.hour, 0)) AS priced,
    if(priced = 1, toFloat64(p.price_per_gpu_hour), NULL) AS price_per_gpu_hour,
    if(priced = 1, toString(p.currency), '') AS currency,
    h.gpu_hours * price_per_gpu_hour AS cost,
    h.idle_gpu_hours * price_per_gpu_hour AS idle_cost,
    h.unobserved_gpu_hours AS unobserved_gpu_hours
FROM {{.DB}}.chargeback_hourly_current AS h
ASOF LEFT JOIN {{.DB}}.price_timeline AS p ON h.card = p.card AND h.hour >= p.valid_from
LEFT JOIN {{.DB}}.chargeback_jobs AS j ON h.job = j.job;

CREATE OR REPLACE VIEW {{.DB}}.chargeback_daily {{.OnCluster}} AS
SELECT
    toDate(c.hour)                                    AS day,
    c.team                                            AS team,
    c.project                                         AS project,
    c.model_name                                      AS model_name,
    c.pool                                            AS pool,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    uniqExact(c.job)                                  AS jobs,
    sum(c.gpu_hours)                                  AS gpu_hours,
    sum(c.used_gpu_hours)                             AS used_gpu_hours,
    sum(c.idle_gpu_hours)                             AS idle_gpu_hours,
    sum(c.unmeasured_gpu_hours)                       AS unmeasured_gpu_hours,
    sumIf(c.gpu_hours, c.priced = 0)                  AS unpriced_gpu_hours,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.cost)) AS cost,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    sumIf(c.gpu_hours, c.failed_rerun = 1)            AS failed_rerun_gpu_hours,
    if(countIf(c.priced = 0 AND c.failed_rerun = 1) > 0 OR uniqExactIf(c.currency, c.priced = 1 AND c.failed_rerun = 1) > 1,
       NULL, ifNull(sumIf(c.cost, c.failed_rerun = 1), 0)) AS failed_rerun_cost,
    sum(c.queue_wait_hours)                           AS queue_wait_hours,
    sum(c.energy_kwh)                                 AS energy_kwh,
    sum(c.unobserved_gpu_hours)                       AS unobserved_gpu_hours
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, model_name, pool, card;

CREATE OR REPLACE VIEW {{.DB}}.chargeback_monthly {{.OnCluster}} AS
SELECT
    toStartOfMonth(c.hour)                            AS month,
    c.team                                            AS team,
    c.project                                         AS project,
    c.model_name                                      AS model_name,
    c.pool                                            AS pool,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    uniqExact(c.job)                                  AS jobs,
    sum(c.gpu_hours)                                  AS gpu_hours,
    sum(c.used_gpu_hours)                             AS used_gpu_hours,
    sum(c.idle_gpu_hours)                             AS idle_gpu_hours,
    sum(c.unmeasured_gpu_hours)                       AS unmeasured_gpu_hours,
    sumIf(c.gpu_hours, c.priced = 0)                  AS unpriced_gpu_hours,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.cost)) AS cost,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    sumIf(c.gpu_hours, c.failed_rerun = 1)            AS failed_rerun_gpu_hours,
    if(countIf(c.priced = 0 AND c.failed_rerun = 1) > 0 OR uniqExactIf(c.currency, c.priced = 1 AND c.failed_rerun = 1) > 1,
       NULL, ifNull(sumIf(c.cost, c.failed_rerun = 1), 0)) AS failed_rerun_cost,
    sum(c.queue_wait_hours)                           AS queue_wait_hours,
    sum(c.energy_kwh)                                 AS energy_kwh,
    sum(c.unobserved_gpu_hours)                       AS unobserved_gpu_hours
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY month, team, project, model_name, pool, card;
