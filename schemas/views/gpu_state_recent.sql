-- Each GPU unit's state over a recent window of its raw samples, read as
-- `gpu_state_recent(from = …, to = …)`: `gpu_state_between`'s columns and meaning,
-- from `gpu_samples_recent` (migration 0026), which holds the last three hours or
-- more of `gpu_samples` sorted by time, so a five-minute window reads five minutes
-- of samples however long the day. A window older than three hours may have lost
-- samples here: read `gpu_state_between` for it. The console's fleet page reads the
-- last five minutes here when they are recent.
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

CREATE OR REPLACE VIEW {{.DB}}.gpu_state_recent {{.OnCluster}} AS
{{template "gpu_state" samples . "gpu_samples_recent"}};
