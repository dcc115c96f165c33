-- Each GPU unit's state over a window of its raw samples, read as
-- `gpu_state_between(from = …, to = …)`: the window is whole minutes, `from` and `to`
-- rounded down to the minute, and a sample counts when its `ts` is at or after the
-- first and before the second. Means are over the window's samples; memory and
-- temperature are the most in the GPU's latest minute with samples. Only the
-- window's samples are read, but gpu_samples is sorted by GPU and partitioned by
-- day, so the day so far is scanned: for the last hours read `gpu_state_recent`.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `gpu_uuid` | LowCardinality(String) | GPU (GPU-…) or MIG instance (MIG-…) |
-- | `gpu_index` | UInt16 | its index on its node |
-- | `model` | String | card model as the driver names it |
-- | `driver_version` | String | NVIDIA driver version in its latest minute (the greatest, should it change within it) |
-- | `fb_total_mib` | UInt32 | framebuffer memory, MiB |
-- | `fb_used_mib` | UInt32 | the most memory used in its latest minute, MiB |
-- | `sm_active` | Nullable(Float64) | mean activity: SM activity, else graphics engine activity, else utilisation |
-- | `power_w` | Nullable(Float64) | mean power draw, W |
-- | `temp_c` | Nullable(Float32) | the highest temperature in its latest minute, °C |
-- | `xid` | UInt32 | highest XID error reported |
-- | `last_ts` | DateTime64(3, 'UTC') | its latest sample |

CREATE OR REPLACE VIEW {{.DB}}.gpu_state_between {{.OnCluster}} AS
{{template "gpu_state" samples . "gpu_samples"}};
