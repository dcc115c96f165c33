-- The chargeback's state in one string, from the refresh log: it changes whenever an
-- hour of the chargeback is refreshed, and only then, so a reader caching figures of
-- a period (the console's chargeback page) knows when to compute them again.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `version` | String | the latest refresh time and the number of refreshes, `<time>/<count>` |

CREATE OR REPLACE VIEW {{.DB}}.chargeback_version {{.OnCluster}} AS
SELECT toString(max(refreshed_at)) || '/' || toString(count()) AS version
FROM {{.DB}}.chargeback_refreshes;
