-- Each GPU unit's state over a window of its raw samples, read as
-- `gpu_state_between(from = …, to = …)`: a sample counts when its `ts` is at or after
-- `from` and before `to`. The console's fleet page reads the last five minutes for a
-- GPU's memory, power, temperature and activity now; only the window's samples are read.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `gpu_uuid` | LowCardinality(String) | GPU (GPU-…) or MIG instance (MIG-…) |
-- | `gpu_index` | UInt16 | its index on its node |
-- | `model` | String | card model as the driver names it |
-- | `driver_version` | String | NVIDIA driver version of its latest sample |
-- | `fb_total_mib` | UInt32 | framebuffer memory, MiB |
-- | `fb_used_mib` | UInt32 | memory used at its latest sample, MiB |
-- | `sm_active` | Nullable(Float64) | mean activity: SM activity, else graphics engine activity, else utilisation |
-- | `power_w` | Nullable(Float64) | mean power draw, W |
-- | `temp_c` | Nullable(Float32) | temperature at its latest sample, °C |
-- | `xid` | UInt32 | highest XID error reported |
-- | `last_ts` | DateTime64(3, 'UTC') | its latest sample |

CREATE OR REPLACE VIEW {{.DB}}.gpu_state_between {{.OnCluster}} AS
SELECT
    gpu_uuid,
    any(gpu_index)                                      AS gpu_index,
    any(model)                                          AS model,
    argMax(driver_version, ts)                          AS driver_version,
    max(fb_total_mib)                                   AS fb_total_mib,
    argMax(fb_used_mib, ts)                             AS fb_used_mib,
    avg(coalesce(sm_active, gr_engine_active, gpu_util)) AS sm_active,
    avg(power_w)                                        AS power_w,
    argMax(temp_c, ts)                                  AS temp_c,
    max(xid)                                            AS xid,
    max(ts)                                             AS last_ts
FROM {{.DB}}.gpu_samples
WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
GROUP BY gpu_uuid;
