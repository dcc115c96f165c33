-- Each GPU unit's activity hour by hour, from the hourly rollup: one row per GPU unit
-- (a MIG instance is a unit of its own) and hour it reported in. The console's fleet
-- page draws its sparklines from it. A filter on `hour` or `gpu_uuid` is applied before
-- the hour's rows are summed, so a day of a large fleet reads that day alone.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `gpu_uuid` | LowCardinality(String) | GPU (GPU-…) or MIG instance (MIG-…) |
-- | `hour` | DateTime('UTC') | start of the hour |
-- | `cluster` | String | cluster |
-- | `node` | String | node |
-- | `card` | String | card type, e.g. H100-80GB |
-- | `mig_profile` | String | MIG profile, e.g. 1g.10gb; empty for a whole GPU |
-- | `samples` | UInt64 | samples in the hour |
-- | `sm_active` | Nullable(Float64) | mean SM activity (ratio 0..1) over the samples that have it; NULL when none do |
-- | `gr_engine_active` | Nullable(Float64) | mean graphics engine activity (ratio 0..1); NULL when no sample has it |
-- | `activity` | Nullable(Float64) | `sm_active`, else `gr_engine_active`: the GPU's activity in the hour |
-- | `xid_samples` | UInt64 | samples reporting an XID error |

CREATE OR REPLACE VIEW {{.DB}}.gpu_activity_hourly {{.OnCluster}} AS
SELECT
    gpu_uuid,
    hour,
    any(cluster)                                                     AS cluster,
    any(node)                                                        AS node,
    any(card)                                                        AS card,
    any(mig_profile)                                                 AS mig_profile,
    sum(samples)                                                     AS samples,
    sum(sm_active_sum) / nullIf(sum(sm_active_samples), 0)           AS sm_active,
    sum(gr_engine_active_sum) / nullIf(sum(gr_engine_active_samples), 0) AS gr_engine_active,
    coalesce(sm_active, gr_engine_active)                            AS activity,
    sum(xid_samples)                                                 AS xid_samples
FROM {{.DB}}.gpu_hour
GROUP BY gpu_uuid, hour;
