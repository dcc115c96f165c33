-- Each GPU unit's activity minute by minute, from the minute rollup: one row per GPU
-- unit and minute it reported in, with sums and sample counts rather than means, so
-- that a reader can weigh minutes into coarser buckets (sum the sums, divide by the
-- summed counts). The console's job page charts a job's GPUs from it. A filter on
-- `gpu_uuid` or `minute` is applied before the minute's rows are summed.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `gpu_uuid` | LowCardinality(String) | GPU (GPU-…) or MIG instance (MIG-…) |
-- | `minute` | DateTime('UTC') | start of the minute |
-- | `samples` | UInt64 | samples in the minute |
-- | `sm_active_sum` | Float64 | SM activity (ratio) summed over the samples that have it |
-- | `sm_active_samples` | UInt64 | samples with SM activity |
-- | `dram_active_sum` | Float64 | memory bandwidth activity (ratio) summed |
-- | `dram_active_samples` | UInt64 | samples with it |
-- | `fb_used_mib_max` | UInt32 | most framebuffer memory used in the minute, MiB |
-- | `power_w_sum` | Float64 | power draw summed, W |
-- | `power_samples` | UInt64 | samples with a power reading |
-- | `xid_samples` | UInt64 | samples reporting an XID error |

CREATE OR REPLACE VIEW {{.DB}}.gpu_activity_minutely {{.OnCluster}} AS
SELECT
    gpu_uuid,
    minute,
    sum(samples)             AS samples,
    sum(sm_active_sum)       AS sm_active_sum,
    sum(sm_active_samples)   AS sm_active_samples,
    sum(dram_active_sum)     AS dram_active_sum,
    sum(dram_active_samples) AS dram_active_samples,
    toUInt32(max(fb_used_mib_max)) AS fb_used_mib_max,
    sum(power_w_sum)         AS power_w_sum,
    sum(power_samples)       AS power_samples,
    sum(xid_samples)         AS xid_samples
FROM {{.DB}}.gpu_minute
GROUP BY gpu_uuid, minute;
