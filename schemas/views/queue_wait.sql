-- One row per job attempt ever submitted: how long it waited for GPUs.
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
-- | `attempt` | UInt32 | 1 for the first run, 2 for the first rerun, … |
-- | `state` | String | queued, running or ended |
-- | `status` | String | succeeded, failed, cancelled, preempted; empty until it ends |
-- | `submit_time` | Nullable(DateTime64(3, 'UTC')) | when it was submitted |
-- | `start_time` | Nullable(DateTime64(3, 'UTC')) | when it started; NULL if it never did |
-- | `queue_wait_hours` | Float64 | hours from submit to start (to its end if it never started, to now while queued) |
-- | `queued_gpu_hours` | Float64 | `queue_wait_hours` × `requested_gpus`: GPU demand left waiting |
-- | `queue_wait_price_per_gpu_hour` | Nullable(Float64) | price of a waiting GPU-hour: the pool's `queue-wait:<pool>` price, else the requested card's, at the hour it started (now while queued); NULL for any card or an unpriced one |
-- | `queue_wait_currency` | String | its currency |
-- | `queue_wait_cost` | Nullable(Float64) | `queued_gpu_hours` × that price: the opportunity cost of the wait |

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
