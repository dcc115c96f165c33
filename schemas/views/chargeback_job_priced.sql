-- `chargeback_priced` summed over the GPUs of each hour, job attempt, card type and
-- cluster (and, for unallocated time, over the free GPUs of a card type in a
-- cluster): the same labels, prices and money columns, on a few rows instead of one
-- per GPU, so the views above that need no GPU (`chargeback_daily`,
-- `chargeback_monthly`, `idle_cost`, `unallocated_capacity`, `job_failures`,
-- `job_output`) and `gpupool report` read it (migration 0012). The analyzer writes
-- its rollup, `chargeback_job_hourly`, in the same refresh as `chargeback_hourly`;
-- prices and labels are still joined when read. Any sum of it equals the same sum of
-- `chargeback_priced` (up to the order of float additions).
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `hour` | DateTime('UTC') | start of the hour |
-- | `job` | String | job attempt key; empty for unallocated time |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `card` | LowCardinality(String) | card type |
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
-- | `queue_wait_hours` | Float64 | queue wait, in the hour the attempt started |
-- | `priced` | UInt8 | 1 if the price book has a price for the hour |
-- | `price_per_gpu_hour` | Nullable(Float64) | the price applied |
-- | `currency` | String | its currency |
-- | `cost` | Nullable(Float64) | `gpu_hours` × price |
-- | `idle_cost` | Nullable(Float64) | `idle_gpu_hours` × price |
-- | `unobserved_gpu_hours` | Float64 | the part of `unmeasured_gpu_hours` when the GPU sent no sample at all |
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
-- | `gpu_rows` | UInt64 | `chargeback_priced` rows summed |
-- | `sm_active_gpu_hours` | Float64 | GPU-hours of the rows with `sm_active_mean` |
-- | `sm_active_weighted` | Float64 | Σ `gpu_hours` × `sm_active_mean` over them: their mean is the ratio |
-- | `gr_engine_active_gpu_hours` | Float64 | GPU-hours of the rows with `gr_engine_active_mean` |
-- | `gr_engine_active_weighted` | Float64 | Σ `gpu_hours` × `gr_engine_active_mean` over them |
-- | `silent_minutes_max` | Float64 | largest minutes one GPU of the row held without a measurement (60 × `unmeasured_gpu_hours` / `gpu_weight`) |

CREATE OR REPLACE VIEW {{.DB}}.chargeback_job_priced {{.OnCluster}} AS
SELECT
    h.hour AS hour, h.job AS job, h.cluster AS cluster, h.card AS card,
    j.team AS team, j.project AS project, j.pool AS pool, j.model_name AS model_name,
    j.status AS status, j.attempt AS attempt, j.failed_rerun AS failed_rerun,
    h.gpu_hours AS gpu_hours, h.used_gpu_hours AS used_gpu_hours, h.idle_gpu_hours AS idle_gpu_hours,
    h.unmeasured_gpu_hours AS unmeasured_gpu_hours, h.energy_kwh AS energy_kwh,
    h.queue_wait_hours AS queue_wait_hours,
    {{template "pricing_columns" .}},
    h.gpu_rows AS gpu_rows,
    h.sm_active_gpu_hours AS sm_active_gpu_hours,
    h.sm_active_weighted AS sm_active_weighted,
    h.gr_engine_active_gpu_hours AS gr_engine_active_gpu_hours,
    h.gr_engine_active_weighted AS gr_engine_active_weighted,
    h.silent_minutes_max AS silent_minutes_max
FROM (
    -- the current generation of each hour, as chargeback_hourly_current reads it
    SELECT r.hour AS hour, r.generation AS generation, r.job AS job, r.card AS card,
           r.cluster AS cluster, r.gpu_rows AS gpu_rows, r.gpu_hours AS gpu_hours, r.used_gpu_hours AS used_gpu_hours,
           r.idle_gpu_hours AS idle_gpu_hours, r.unmeasured_gpu_hours AS unmeasured_gpu_hours, r.unobserved_gpu_hours AS unobserved_gpu_hours, r.energy_kwh AS energy_kwh,
           r.queue_wait_hours AS queue_wait_hours, r.sm_active_gpu_hours AS sm_active_gpu_hours, r.sm_active_weighted AS sm_active_weighted, r.gr_engine_active_gpu_hours AS gr_engine_active_gpu_hours,
           r.gr_engine_active_weighted AS gr_engine_active_weighted, r.silent_minutes_max AS silent_minutes_max
    FROM {{.DB}}.chargeback_job_hourly AS r
    WHERE (r.hour, r.generation) GLOBAL IN (
        SELECT x.hour, argMax(x.generation, x.refreshed_at) FROM {{.DB}}.chargeback_refreshes AS x GROUP BY x.hour
    )
) AS h
{{template "pricing_joins" .}};
