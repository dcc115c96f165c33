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
{{template "gpu_state" samples . "gpu_samples"}};
