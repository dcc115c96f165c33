-- The analyzer's off-peak recommendations: started attempts worth submitting at night
-- instead. A job is listed when it was submitted outside 22:00–07:00 UTC, is batch work
-- (its pool or queue name contains `batch`) or queued an hour or more, is not interactive
-- (workload `dev`, a notebook, or `inference`, a service: their hours are their users'), and the off-peak
-- cells of its queue and card in `queue_wait_profile` hold at least 3 started jobs that
-- waited on average at most half as long as it did and at least a quarter of an hour
-- less. The figure (`window_wait_hours`) is those jobs' mean wait, each cell weighted by
-- its jobs; a job's own wait never enters it (it was submitted outside the window).
-- What moving would have saved is priced like `queue_wait` (the pool's
-- `queue-wait:<pool>` price, else the requested card's, at the hour it started): an
-- opportunity cost, NULL when unpriced. `recommendation` says it in a sentence:
-- "submitted Mon 14:00, started Mon 17:12 after 3.2 h queued; submitted in 22:00-07:00
-- UTC it would have waited ~0.4 h (mean of 7 night-time jobs of queue batch on
-- L40S-48GB)". A job can then ask for the window: `gpupool submit --window 22:00-07:00`
-- (docs/scheduler.md).
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `job` | String | job attempt key |
-- | `cluster` | String | cluster |
-- | `team` | String | team |
-- | `project` | String | project |
-- | `queue` | String | queue it waited in |
-- | `pool` | String | pool |
-- | `model_name` | String | model |
-- | `requested_card` | String | card type asked for; empty for any |
-- | `requested_gpus` | UInt32 | GPUs asked for |
-- | `attempt` | UInt32 | attempt number |
-- | `submit_time` | Nullable(DateTime64(3, 'UTC')) | when it was submitted |
-- | `start_time` | Nullable(DateTime64(3, 'UTC')) | when it started |
-- | `queue_wait_hours` | Float64 | hours it waited |
-- | `window` | String | the off-peak window, `22:00-07:00 UTC` |
-- | `window_jobs` | UInt64 | started jobs of its queue and card submitted in the window |
-- | `window_wait_hours` | Float64 | their mean wait: what it would have waited |
-- | `saved_wait_hours` | Float64 | `queue_wait_hours` − `window_wait_hours` |
-- | `saved_gpu_hours` | Float64 | `saved_wait_hours` × `requested_gpus`: waiting GPU-hours saved |
-- | `queue_wait_price_per_gpu_hour` | Nullable(Float64) | price of a waiting GPU-hour, as in `queue_wait` |
-- | `currency` | String | its currency |
-- | `saved_cost` | Nullable(Float64) | `saved_gpu_hours` × that price: queue-wait cost saved |
-- | `recommendation` | String | the recommendation with its figure |

CREATE OR REPLACE VIEW {{.DB}}.off_peak {{.OnCluster}} AS
SELECT
    w.job AS job, w.cluster AS cluster, w.team AS team, w.project AS project, w.queue AS queue,
    w.pool AS pool, w.model_name AS model_name, toString(w.requested_card) AS requested_card,
    w.requested_gpus AS requested_gpus, w.attempt AS attempt,
    w.submit_time AS submit_time, w.start_time AS start_time,
    w.queue_wait_hours AS queue_wait_hours,
    '22:00-07:00 UTC' AS window,
    o.jobs AS window_jobs,
    o.mean_wait_hours AS window_wait_hours,
    w.queue_wait_hours - o.mean_wait_hours AS saved_wait_hours,
    saved_wait_hours * toFloat64(w.requested_gpus) AS saved_gpu_hours,
    w.queue_wait_price_per_gpu_hour AS queue_wait_price_per_gpu_hour,
    w.queue_wait_currency AS currency,
    saved_gpu_hours * w.queue_wait_price_per_gpu_hour AS saved_cost,
    concat('submitted ', formatDateTime(assumeNotNull(w.submit_time), '%a %H:%i', 'UTC'),
           ', started ', formatDateTime(assumeNotNull(w.start_time), '%a %H:%i', 'UTC'),
           ' after ', toString(round(w.queue_wait_hours, 1)), ' h queued; submitted in 22:00-07:00 UTC it would have waited ~',
           toString(round(o.mean_wait_hours, 1)), ' h (mean of ', toString(o.jobs), ' night-time jobs of queue ',
           if(w.queue != '', w.queue, w.pool), ' on ', if(toString(w.requested_card) != '', toString(w.requested_card), 'any card'),
           ')') AS recommendation
FROM {{.DB}}.queue_wait AS w
LEFT JOIN (SELECT cj.job AS job, cj.workload AS workload FROM {{.DB}}.chargeback_jobs AS cj) AS wl ON wl.job = w.job
INNER JOIN (
    SELECT p.cluster AS cluster, p.queue AS queue, p.pool AS pool, p.requested_card AS requested_card,
           sum(p.jobs) AS jobs, sum(p.mean_wait_hours * p.jobs) / sum(p.jobs) AS mean_wait_hours
    FROM {{.DB}}.queue_wait_profile AS p
    WHERE p.off_peak = 1
    GROUP BY cluster, queue, pool, requested_card
) AS o ON o.cluster = w.cluster AND o.queue = w.queue AND o.pool = w.pool AND o.requested_card = toString(w.requested_card)
WHERE w.start_time IS NOT NULL
  AND NOT (toHour(toDateTime(assumeNotNull(w.submit_time), 'UTC')) >= 22 OR toHour(toDateTime(assumeNotNull(w.submit_time), 'UTC')) < 7)
  AND (positionCaseInsensitive(w.pool, 'batch') > 0 OR positionCaseInsensitive(w.queue, 'batch') > 0 OR w.queue_wait_hours >= 1)
  AND wl.workload NOT IN ('dev', 'inference')
  AND o.jobs >= 3
  AND o.mean_wait_hours <= 0.5 * w.queue_wait_hours
  AND w.queue_wait_hours - o.mean_wait_hours >= 0.25;
