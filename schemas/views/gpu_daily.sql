-- Per GPU (or MIG instance) and day: finds GPUs that were never used.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `day` | Date | UTC day |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `node` | LowCardinality(String) | node |
-- | `gpu_uuid` | LowCardinality(String) | `GPU-…` or `MIG-…` |
-- | `card` | LowCardinality(String) | card type |
-- | `mig_profile` | LowCardinality(String) | MIG profile; empty for a whole GPU |
-- | `capacity_gpu_hours` | Float64 | GPU-hours it was there (weighted) |
-- | `allocated_gpu_hours` | Float64 | of which held by jobs |
-- | `active_gpu_hours` | Float64 | of which active, held or not |
-- | `unallocated_active_gpu_hours` | Float64 | active while no job held it |
-- | `jobs` | UInt64 | job attempts that held it |

CREATE OR REPLACE VIEW {{.DB}}.gpu_daily {{.OnCluster}} AS
SELECT
    toDate(h.hour)                                    AS day,
    h.cluster                                         AS cluster,
    h.node                                            AS node,
    h.gpu_uuid                                        AS gpu_uuid,
    h.card                                            AS card,
    h.mig_profile                                     AS mig_profile,
    sum(h.gpu_hours)                                  AS capacity_gpu_hours,
    sumIf(h.gpu_hours, h.job != '')                   AS allocated_gpu_hours,
    sum(h.used_gpu_hours)                             AS active_gpu_hours,
    sumIf(h.used_gpu_hours, h.job = '')               AS unallocated_active_gpu_hours,
    uniqExactIf(h.job, h.job != '')                   AS jobs
FROM {{.DB}}.chargeback_hourly_current AS h
GROUP BY day, cluster, node, gpu_uuid, card, mig_profile;
