-- `unallocated_capacity` spread over the teams that used that card type in that
-- cluster that day, in proportion to their GPU-hours. Days on which no team used a
-- card type leave its unallocated capacity unspread.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `day` | Date | UTC day |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `card` | LowCardinality(String) | card type |
-- | `team` | String | team |
-- | `currency` | String | currency of `spread_cost` |
-- | `team_allocated_gpu_hours` | Float64 | the team's GPU-hours on these cards |
-- | `use_share` | Float64 | its share of all teams' GPU-hours there, 0..1 |
-- | `spread_gpu_hours` | Float64 | `use_share` × unallocated GPU-hours |
-- | `spread_cost` | Nullable(Float64) | `use_share` × unallocated cost; NULL if unpriced |

CREATE OR REPLACE VIEW {{.DB}}.unallocated_by_team {{.OnCluster}} AS
SELECT
    t.day                                             AS day,
    t.cluster                                         AS cluster,
    t.card                                            AS card,
    t.team                                            AS team,
    u.currency                                        AS currency,
    t.team_gpu_hours                                  AS team_allocated_gpu_hours,
    t.team_gpu_hours / u.allocated_gpu_hours          AS use_share,
    u.unallocated_gpu_hours * use_share               AS spread_gpu_hours,
    u.unallocated_cost * use_share                    AS spread_cost
FROM (
    SELECT toDate(c.hour) AS day, c.cluster AS cluster, c.card AS card, c.team AS team, sum(c.gpu_hours) AS team_gpu_hours
    FROM {{.DB}}.chargeback_priced AS c
    WHERE c.job != ''
    GROUP BY day, cluster, card, team
) AS t
INNER JOIN {{.DB}}.unallocated_capacity AS u ON u.day = t.day AND u.cluster = t.cluster AND u.card = t.card
WHERE u.allocated_gpu_hours > 0;
