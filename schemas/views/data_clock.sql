-- The newest minute the store holds samples for, from the minute rollup (searched
-- within the hour before the newest hour of the hourly rollup, so that it reads little).
-- One row; `minute` is 1970-01-01 00:00:00 when the store holds no sample. The console
-- takes the minute after it as "now", so a simulated or replayed fleet's last day is
-- "the last 24 hours".
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `minute` | DateTime('UTC') | the newest minute with a sample |

CREATE OR REPLACE VIEW {{.DB}}.data_clock {{.OnCluster}} AS
SELECT max(m.minute) AS minute
FROM {{.DB}}.gpu_minute AS m
WHERE m.minute >= (SELECT max(h.hour) FROM {{.DB}}.gpu_hour AS h) - INTERVAL 1 HOUR;
