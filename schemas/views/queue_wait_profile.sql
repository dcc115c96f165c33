-- The hour-of-week wait profile of each queue and requested card: the started job
-- attempts of `queue_wait` by the UTC day of the week and hour they were submitted in.
-- `off_peak` = 1 marks the off-peak window, 22:00–07:00 UTC, every night of the week.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `cluster` | String | cluster |
-- | `queue` | String | queue |
-- | `pool` | String | pool |
-- | `requested_card` | String | card type asked for; empty for any |
-- | `day_of_week` | UInt8 | day of the week of the submission, 1 = Monday (UTC) |
-- | `hour` | UInt8 | hour of the submission (UTC) |
-- | `off_peak` | UInt8 | 1 inside 22:00–07:00 UTC |
-- | `jobs` | UInt64 | started attempts submitted then |
-- | `mean_wait_hours` | Float64 | their mean queue wait |
-- | `p50_wait_hours` | Float64 | median queue wait |
-- | `p90_wait_hours` | Float64 | 90th percentile of the queue wait |

CREATE OR REPLACE VIEW {{.DB}}.queue_wait_profile {{.OnCluster}} AS
SELECT
    w.cluster AS cluster, w.queue AS queue, w.pool AS pool, toString(w.requested_card) AS requested_card,
    toDayOfWeek(toDateTime(assumeNotNull(w.submit_time), 'UTC')) AS day_of_week,
    toHour(toDateTime(assumeNotNull(w.submit_time), 'UTC')) AS hour,
    toUInt8(hour >= 22 OR hour < 7) AS off_peak,
    count() AS jobs,
    avg(w.queue_wait_hours) AS mean_wait_hours,
    quantileExact(0.5)(w.queue_wait_hours) AS p50_wait_hours,
    quantileExact(0.9)(w.queue_wait_hours) AS p90_wait_hours
FROM {{.DB}}.queue_wait AS w
WHERE w.start_time IS NOT NULL
GROUP BY cluster, queue, pool, requested_card, day_of_week, hour;
