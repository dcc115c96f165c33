-- GPU time no job held, per day, cluster and card type, reported apart from the teams'
-- chargeback.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `day` | Date | UTC day |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `card` | LowCardinality(String) | card type |
-- | `currency` | String | currency of `unallocated_cost` |
-- | `capacity_gpu_hours` | Float64 | GPU-hours the cards were there for (reporting, or held by a job) |
-- | `allocated_gpu_hours` | Float64 | of which held by jobs |
-- | `unallocated_gpu_hours` | Float64 | of which no job held, while the GPU was reporting |
-- | `unallocated_active_gpu_hours` | Float64 | unallocated yet active: processes no job accounts for |
-- | `unallocated_cost` | Nullable(Float64) | `unallocated_gpu_hours` × price; NULL if unpriced |
-- | `unallocated_energy_kwh` | Float64 | energy drawn while unallocated, kWh |

CREATE OR REPLACE VIEW {{.DB}}.unallocated_capacity {{.OnCluster}} AS
SELECT
    toDate(c.hour)                                    AS day,
    c.cluster                                         AS cluster,
    c.card                                            AS card,
    anyIf(c.currency, c.priced = 1)                   AS currency,
    sum(c.gpu_hours)                                  AS capacity_gpu_hours,
    sumIf(c.gpu_hours, c.job != '')                   AS allocated_gpu_hours,
    sumIf(c.gpu_hours, c.job = '')                    AS unallocated_gpu_hours,
    sumIf(c.used_gpu_hours, c.job = '')               AS unallocated_active_gpu_hours,
    if(countIf(c.job = '' AND c.priced = 0) > 0 OR uniqExactIf(c.currency, c.job = '' AND c.priced = 1) > 1,
       NULL, ifNull(sumIf(c.cost, c.job = ''), 0))    AS unallocated_cost,
    sumIf(c.energy_kwh, c.job = '')                   AS unallocated_energy_kwh
FROM {{.DB}}.chargeback_job_priced AS c
GROUP BY day, cluster, card;
