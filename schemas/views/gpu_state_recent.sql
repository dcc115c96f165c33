-- Each GPU unit's state over a recent window, read as
-- `gpu_state_recent(from = …, to = …)`: `gpu_state_between`'s columns and meaning,
-- from `gpu_state_minute` (migration 0027), the per-minute rollup of the last three
-- hours or more that ingest writes, sorted by minute: a five-minute window reads
-- five rows per GPU however often it is sampled. A window older than three hours
-- may have lost minutes here: read `gpu_state_between` for it. The console's fleet
-- page reads the last five minutes here when they are recent.
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

CREATE OR REPLACE VIEW {{.DB}}.gpu_state_recent {{.OnCluster}} AS
{{template "gpu_state" samples . "gpu_state_minute"}};
