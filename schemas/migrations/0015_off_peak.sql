-- 0015: off-peak recommendations: batch work that waited in the busy hours and
-- would have waited less submitted at night.
--
-- queue_wait_profile is the hour-of-week wait profile of each queue and requested
-- card: per cluster, queue, pool and card, the day of the week (1 = Monday) and
-- hour (UTC) jobs were submitted in, how many started and how long they waited
-- (mean, median, p90). off_peak = 1 marks the off-peak window, 22:00–07:00 UTC
-- (every night of the week).
--
-- off_peak lists the started attempts worth moving: submitted outside the window,
-- in a batch pool or queue (its name contains "batch") or queued for an hour or
-- more, and not interactive (workload dev, a notebook, or inference, a service:
-- their hours are their users'), whose queue and card's off-peak cells hold at least 3 started jobs that
-- waited on average at most half as long and at least a quarter of an hour less.
-- The figure is the off-peak mean wait (window_wait_hours), weighted by the jobs
-- of each cell; what moving saves is the difference (saved_wait_hours) × the GPUs
-- asked for, priced like queue_wait (queue-wait:<pool>, else the requested card's
-- price, at the hour the job started): an opportunity cost, NULL when unpriced.
-- A job's own wait never enters its estimate: it was submitted outside the window.

CREATE VIEW IF NOT EXISTS {{.DB}}.queue_wait_profile {{.OnCluster}} AS
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

CREATE VIEW IF NOT EXISTS {{.DB}}.off_peak {{.OnCluster}} AS
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
