-- Distributions, not averages: per month, the median and 95th percentile of GPU
-- activity over allocated GPU-hours, by job, team, card type, UTC hour of day, model
-- and cluster. Each
-- (hour, GPU, job) counts with its GPU-hours as weight, with the hour's mean activity
-- as value.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `month` | Date | first day of the UTC month |
-- | `dimension` | String | `job`, `team`, `card`, `hour_of_day`, `model` or `cluster` |
-- | `key` | String | the job key, team, card type, hour of day `0`–`23`, model name or cluster |
-- | `gpu_hours` | Float64 | allocated GPU-hours behind the figures |
-- | `sm_active_p50` | Nullable(Float64) | median SM activity, ratio 0..1 |
-- | `sm_active_p95` | Nullable(Float64) | 95th percentile SM activity |
-- | `gr_engine_active_p50` | Nullable(Float64) | median graphics-engine activity |
-- | `gr_engine_active_p95` | Nullable(Float64) | 95th percentile graphics-engine activity |

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
