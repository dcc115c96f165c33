-- The measured figures behind `chargeback_priced`, before prices and labels: the
-- current version of each hour of `chargeback_hourly`.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `hour` | DateTime('UTC') | start of the hour |
-- | `gpu_uuid` | LowCardinality(String) | GPU or MIG instance |
-- | `job` | String | job attempt key; empty for unallocated time |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `node` | LowCardinality(String) | node |
-- | `card` | LowCardinality(String) | card type |
-- | `mig_profile` | LowCardinality(String) | MIG profile |
-- | `gpu_weight` | Float64 | GPUs the unit counts as |
-- | `gpu_hours` | Float64 | GPU-hours held |
-- | `used_gpu_hours` | Float64 | held, measured and active |
-- | `idle_gpu_hours` | Float64 | held, measured and not active |
-- | `unmeasured_gpu_hours` | Float64 | held with no measurement |
-- | `energy_kwh` | Float64 | energy, kWh |
-- | `sm_active_mean` | Nullable(Float64) | mean SM activity |
-- | `gr_engine_active_mean` | Nullable(Float64) | mean graphics-engine activity |
-- | `queue_wait_hours` | Float64 | queue wait |
-- | `unobserved_gpu_hours` | Float64 | the part of `unmeasured_gpu_hours` when the GPU sent no sample at all (no telemetry) |

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
