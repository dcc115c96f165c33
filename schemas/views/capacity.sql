-- Demand against capacity per hour, card type and cluster. GPU figures are averages
-- over the hour (GPU-hours in the hour ÷ 1 hour). Rows stop at the last hour the
-- cluster's GPUs reported a sample (a queued job that names no cluster: the last hour
-- any GPU reported), so a gap in the data does not show as capacity 0 with demand
-- waiting.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `hour` | DateTime('UTC') | start of the hour |
-- | `card` | String | card type; queued jobs that accept any card appear under `''` |
-- | `capacity_gpus` | Float64 | GPUs there (reporting, or held by a job) |
-- | `running_gpus` | Float64 | GPUs held by jobs |
-- | `active_gpus` | Float64 | GPUs held and active |
-- | `queued_gpus` | Float64 | GPUs asked for by jobs waiting in a queue |
-- | `demand_gpus` | Float64 | `running_gpus` + `queued_gpus` |
-- | `free_gpus` | Float64 | `capacity_gpus` − `running_gpus` |
-- | `cluster` | String | cluster; `''` for queued jobs that name none |

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
