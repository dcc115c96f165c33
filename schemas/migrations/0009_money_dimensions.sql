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
    h.unobserved_gpu_hours AS unobserved_gpu_hours,
    j.queue AS queue,
    h.queue_wait_hours * toFloat64(j.requested_gpus) AS queue_wait_gpu_hours,
    toUInt8(ifNull(qp.valid_to > h.hour, 0)) AS queue_wait_pool_priced,
    multiIf(queue_wait_pool_priced = 1, toFloat64(qp.price_per_gpu_hour), priced = 1, price_per_gpu_hour, NULL) AS queue_wait_price_per_gpu_hour,
    multiIf(queue_wait_pool_priced = 1, toString(qp.currency), currency) AS queue_wait_currency,
    queue_wait_gpu_hours * queue_wait_price_per_gpu_hour AS queue_wait_cost,
    toUInt8(ifNull(ep.valid_to > h.hour, 0)) AS energy_priced,
    if(energy_priced = 1, toFloat64(ep.price_per_gpu_hour), NULL) AS energy_price_per_kwh,
    if(energy_priced = 1, toString(ep.currency), '') AS energy_currency,
    h.energy_kwh * energy_price_per_kwh AS energy_cost
FROM {{.DB}}.chargeback_hourly_current AS h
ASOF LEFT JOIN {{.DB}}.price_timeline AS p ON h.card = p.card AND h.hour >= p.valid_from
LEFT JOIN {{.DB}}.chargeback_jobs AS j ON h.job = j.job
ASOF LEFT JOIN {{.DB}}.price_timeline AS qp ON concat('queue-wait:', j.pool) = qp.card AND h.hour >= qp.valid_from
ASOF LEFT JOIN {{.DB}}.price_timeline AS ep ON concat('energy:', h.cluster) = ep.card AND h.hour >= ep.valid_from;

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
    sum(c.unobserved_gpu_hours)                       AS unobserved_gpu_hours,
    sum(c.queue_wait_gpu_hours)                       AS queue_wait_gpu_hours,
    anyIf(c.queue_wait_currency, c.queue_wait_currency != '') AS queue_wait_currency,
    if(countIf(c.queue_wait_gpu_hours > 0 AND c.queue_wait_currency = '') > 0 OR uniqExactIf(c.queue_wait_currency, c.queue_wait_gpu_hours > 0) > 1,
       NULL, ifNull(sumIf(c.queue_wait_cost, c.queue_wait_gpu_hours > 0), 0)) AS queue_wait_cost,
    anyIf(c.energy_currency, c.energy_currency != '') AS energy_currency,
    sumIf(c.energy_kwh, c.energy_currency = '')       AS unpriced_energy_kwh,
    if(countIf(c.energy_kwh > 0 AND c.energy_currency = '') > 0 OR uniqExactIf(c.energy_currency, c.energy_kwh > 0) > 1,
       NULL, ifNull(sumIf(c.energy_cost, c.energy_kwh > 0), 0)) AS energy_cost,
    c.cluster                                         AS cluster
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, model_name, pool, card, cluster;

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
    sum(c.unobserved_gpu_hours)                       AS unobserved_gpu_hours,
    sum(c.queue_wait_gpu_hours)                       AS queue_wait_gpu_hours,
    anyIf(c.queue_wait_currency, c.queue_wait_currency != '') AS queue_wait_currency,
    if(countIf(c.queue_wait_gpu_hours > 0 AND c.queue_wait_currency = '') > 0 OR uniqExactIf(c.queue_wait_currency, c.queue_wait_gpu_hours > 0) > 1,
       NULL, ifNull(sumIf(c.queue_wait_cost, c.queue_wait_gpu_hours > 0), 0)) AS queue_wait_cost,
    anyIf(c.energy_currency, c.energy_currency != '') AS energy_currency,
    sumIf(c.energy_kwh, c.energy_currency = '')       AS unpriced_energy_kwh,
    if(countIf(c.energy_kwh > 0 AND c.energy_currency = '') > 0 OR uniqExactIf(c.energy_currency, c.energy_kwh > 0) > 1,
       NULL, ifNull(sumIf(c.energy_cost, c.energy_kwh > 0), 0)) AS energy_cost,
    c.cluster                                         AS cluster
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY month, team, project, model_name, pool, card, cluster;

CREATE OR REPLACE VIEW {{.DB}}.idle_cost {{.OnCluster}} AS
SELECT
    toDate(c.hour)                                    AS day,
    c.team                                            AS team,
    c.project                                         AS project,
    c.job                                             AS job,
    c.model_name                                      AS model_name,
    c.pool                                            AS pool,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    sum(c.gpu_hours)                                  AS gpu_hours,
    sum(c.idle_gpu_hours)                             AS idle_gpu_hours,
    sum(c.idle_gpu_hours) / nullIf(sum(c.used_gpu_hours) + sum(c.idle_gpu_hours), 0) AS idle_ratio,
    if(countIf(c.priced = 0) > 0 OR uniqExactIf(c.currency, c.priced = 1) > 1, NULL, sum(c.idle_cost)) AS idle_cost,
    c.cluster                                         AS cluster
FROM {{.DB}}.chargeback_priced AS c
WHERE c.job != ''
GROUP BY day, team, project, job, model_name, pool, card, cluster;

-- queue_wait prices each job's wait like chargeback_priced, at the hour it started
-- (or at the current hour while it waits): queue-wait:<pool> when the price book
-- has it, else the requested card's price (NULL when the job asked for any card).
CREATE OR REPLACE VIEW {{.DB}}.queue_wait {{.OnCluster}} AS
SELECT
    w.job AS job, w.cluster AS cluster, w.team AS team, w.project AS project, w.queue AS queue,
    w.pool AS pool, w.model_name AS model_name, w.requested_card AS requested_card,
    w.requested_gpus AS requested_gpus, w.attempt AS attempt, w.state AS state, w.status AS status,
    w.submit_time AS submit_time, w.start_time AS start_time,
    w.queue_wait_hours AS queue_wait_hours, w.queued_gpu_hours AS queued_gpu_hours,
    multiIf(qp.valid_to > w.price_hour, toFloat64(qp.price_per_gpu_hour),
            p.valid_to > w.price_hour, toFloat64(p.price_per_gpu_hour), NULL) AS queue_wait_price_per_gpu_hour,
    multiIf(qp.valid_to > w.price_hour, toString(qp.currency), p.valid_to > w.price_hour, toString(p.currency), '') AS queue_wait_currency,
    w.queued_gpu_hours * queue_wait_price_per_gpu_hour AS queue_wait_cost
FROM (
    SELECT
        j.job AS job, j.cluster AS cluster, j.team AS team, j.project AS project, j.queue AS queue,
        j.pool AS pool, j.model_name AS model_name, j.requested_card AS requested_card,
        j.requested_gpus AS requested_gpus, j.attempt AS attempt, j.state AS state, j.status AS status,
        j.submit_time AS submit_time, j.start_time AS start_time,
        ifNull(j.queue_wait_hours,
               greatest(dateDiff('millisecond', assumeNotNull(j.submit_time), ifNull(j.end_time, now64(3))), 0) / 3600000) AS queue_wait_hours,
        queue_wait_hours * j.requested_gpus AS queued_gpu_hours,
        toStartOfHour(toDateTime(ifNull(j.start_time, now64(3)), 'UTC')) AS price_hour
    FROM {{.DB}}.chargeback_jobs AS j
    WHERE j.submit_time IS NOT NULL
) AS w
ASOF LEFT JOIN {{.DB}}.price_timeline AS p ON toString(w.requested_card) = p.card AND w.price_hour >= p.valid_from
ASOF LEFT JOIN {{.DB}}.price_timeline AS qp ON concat('queue-wait:', w.pool) = qp.card AND w.price_hour >= qp.valid_from;

CREATE OR REPLACE VIEW {{.DB}}.utilisation_distribution {{.OnCluster}} AS
SELECT
    toStartOfMonth(c.hour)                            AS month,
    d.1                                               AS dimension,
    d.2                                               AS key,
    sum(c.gpu_hours)                                  AS gpu_hours,
    quantileExactWeighted(0.5)(c.sm_active_mean, toUInt64(round(c.gpu_hours * 3600000)))          AS sm_active_p50,
    quantileExactWeighted(0.95)(c.sm_active_mean, toUInt64(round(c.gpu_hours * 3600000)))         AS sm_active_p95,
    quantileExactWeighted(0.5)(c.gr_engine_active_mean, toUInt64(round(c.gpu_hours * 3600000)))   AS gr_engine_active_p50,
    quantileExactWeighted(0.95)(c.gr_engine_active_mean, toUInt64(round(c.gpu_hours * 3600000)))  AS gr_engine_active_p95
FROM {{.DB}}.chargeback_priced AS c
ARRAY JOIN [('job', c.job), ('team', c.team), ('card', toString(c.card)), ('hour_of_day', toString(toHour(c.hour))),
            ('model', toString(c.model_name)), ('cluster', toString(c.cluster))] AS d
WHERE c.job != ''
GROUP BY month, dimension, key;

-- capacity: every row is cut at the last hour its cluster's GPUs reported a sample
-- (a job with no cluster: the last hour any GPU reported). Before, a job still
-- queued was counted up to now while capacity, which comes from samples, stopped
-- at the last sample: capacity 0 with demand, an artefact of missing data.
CREATE OR REPLACE VIEW {{.DB}}.capacity {{.OnCluster}} AS
SELECT
    x.hour                                            AS hour,
    x.card                                            AS card,
    sum(x.cap)                                        AS capacity_gpus,
    sum(x.run)                                        AS running_gpus,
    sum(x.act)                                        AS active_gpus,
    sum(x.queued)                                     AS queued_gpus,
    running_gpus + queued_gpus                        AS demand_gpus,
    greatest(capacity_gpus - running_gpus, 0)         AS free_gpus,
    x.cluster                                         AS cluster
FROM (
    SELECT h.hour AS hour, toString(h.card) AS card, toString(h.cluster) AS cluster, h.gpu_hours AS cap,
           if(h.job != '', h.gpu_hours, 0) AS run, if(h.job != '', h.used_gpu_hours, 0) AS act, 0 AS queued
    FROM {{.DB}}.chargeback_hourly_current AS h
    UNION ALL
    SELECT q.hour AS hour, q.card AS card, q.cluster AS cluster, 0 AS cap, 0 AS run, 0 AS act,
           q.gpus * greatest(least(q.q_to, toInt64(q.hour_ms) + 3600000) - greatest(q.q_from, toInt64(q.hour_ms)), 0) / 3600000 AS queued
    FROM (
        SELECT toString(j.requested_card) AS card, toString(j.cluster) AS cluster, j.requested_gpus AS gpus,
               toInt64(ifNull((SELECT toInt64(toUnixTimestamp(max(g.hour))) * 1000 + 3600000 FROM {{.DB}}.gpu_hour AS g), 0)) AS last_ms,
               toUnixTimestamp64Milli(assumeNotNull(j.submit_time)) AS q_from,
               least(toUnixTimestamp64Milli(coalesce(j.start_time, j.end_time, now64(3))), last_ms) AS q_to,
               arrayJoin(range(intDiv(toUInt64(q_from), 3600000) * 3600000, toUInt64(greatest(q_to, q_from)), 3600000)) AS hour_ms,
               toDateTime(intDiv(hour_ms, 1000), 'UTC') AS hour
        FROM {{.DB}}.chargeback_jobs AS j
        WHERE j.submit_time IS NOT NULL AND q_from < last_ms
    ) AS q
) AS x
LEFT JOIN (
    SELECT toString(g.cluster) AS cluster, max(g.hour) AS last_hour FROM {{.DB}}.gpu_hour AS g GROUP BY cluster
) AS l ON l.cluster = x.cluster
WHERE x.hour <= if(l.last_hour > toDateTime(0, 'UTC'), l.last_hour, (SELECT max(g2.hour) FROM {{.DB}}.gpu_hour AS g2))
GROUP BY hour, card, cluster;
