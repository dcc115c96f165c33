-- The row-level base of the views above: one row per hour, GPU and job attempt (and
-- per hour and GPU with `job = ''` for unallocated time), labelled and priced. Use it
-- for breakdowns the views do not offer.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `hour` | DateTime('UTC') | start of the hour |
-- | `job` | String | job attempt key; empty for unallocated time |
-- | `gpu_uuid` | LowCardinality(String) | GPU or MIG instance |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `node` | LowCardinality(String) | node |
-- | `card` | LowCardinality(String) | card type |
-- | `mig_profile` | LowCardinality(String) | MIG profile; empty for a whole GPU |
-- | `gpu_weight` | Float64 | GPUs the unit counts as (1, or slices/7) |
-- | `team` | String | team |
-- | `project` | String | project |
-- | `pool` | String | pool |
-- | `model_name` | String | model |
-- | `status` | String | how the attempt ended; empty while running |
-- | `attempt` | UInt32 | attempt number |
-- | `failed_rerun` | UInt8 | 1 if the attempt failed and was rerun |
-- | `gpu_hours` | Float64 | GPU-hours held |
-- | `used_gpu_hours` | Float64 | held, measured and active |
-- | `idle_gpu_hours` | Float64 | held, measured and not active |
-- | `unmeasured_gpu_hours` | Float64 | held with no measurement |
-- | `energy_kwh` | Float64 | energy, kWh |
-- | `queue_wait_hours` | Float64 | queue wait, on the attempt's first GPU in the hour it started |
-- | `sm_active_mean` | Nullable(Float64) | mean SM activity, ratio 0..1 |
-- | `gr_engine_active_mean` | Nullable(Float64) | mean graphics-engine activity, ratio 0..1 |
-- | `priced` | UInt8 | 1 if the price book has a price for the hour |
-- | `price_per_gpu_hour` | Nullable(Float64) | the price applied |
-- | `currency` | String | its currency |
-- | `cost` | Nullable(Float64) | `gpu_hours` × price |
-- | `idle_cost` | Nullable(Float64) | `idle_gpu_hours` × price |
-- | `unobserved_gpu_hours` | Float64 | the part of `unmeasured_gpu_hours` when the GPU sent no sample at all (no telemetry) |
-- | `queue` | String | queue the attempt waited in |
-- | `queue_wait_gpu_hours` | Float64 | `queue_wait_hours` × GPUs asked for (MIG instances by their compute slices, a fraction by its share) |
-- | `queue_wait_pool_priced` | UInt8 | 1 if the price book has `queue-wait:<pool>` for the hour |
-- | `queue_wait_price_per_gpu_hour` | Nullable(Float64) | price of a waiting GPU-hour: the pool's, else `price_per_gpu_hour` |
-- | `queue_wait_currency` | String | its currency; empty when unpriced |
-- | `queue_wait_cost` | Nullable(Float64) | `queue_wait_gpu_hours` × that price |
-- | `energy_priced` | UInt8 | 1 if the price book has `energy:<cluster>` for the hour |
-- | `energy_price_per_kwh` | Nullable(Float64) | the price of a kWh applied |
-- | `energy_currency` | String | its currency; empty when unpriced |
-- | `energy_cost` | Nullable(Float64) | `energy_kwh` × price per kWh |

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
    {{template "pricing_columns" .}}
FROM {{.DB}}.chargeback_hourly_current AS h
{{template "pricing_joins" .}};
