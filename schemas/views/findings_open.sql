-- The analyzer's findings open now: one row per finding, its latest version. A finding is a
-- job (or a process no scheduler knows) wasting GPUs: `idle`, `zombie`, `memory_bound`,
-- `wrong_card`, `low_util`; see the analyzer in the README. Resolved findings stay in the
-- `findings` table (every version, `state = 'resolved'` at the end).
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `id` | String | stable id of the problem (the same across passes) |
-- | `kind` | String | idle, zombie, memory_bound, wrong_card, low_util, compute_bound |
-- | `state` | String | open (first pass of the episode) or updated |
-- | `severity` | String | info (a hint), warning, critical (waste past the configured GPU-hours) |
-- | `cluster` | String | cluster |
-- | `node` | String | node of the first GPU |
-- | `job` | String | job key; empty for a process no scheduler knows |
-- | `team` | String | owning team |
-- | `project` | String | project |
-- | `pool` | String | pool |
-- | `card` | String | card type, e.g. H100-80GB |
-- | `gpu_uuids` | Array(String) | GPUs (GPU-… or MIG-…) concerned |
-- | `pid` | UInt32 | process id, for a zombie; 0 otherwise |
-- | `since` | DateTime64(3, 'UTC') | estimated start of the condition; waste counts from here |
-- | `first_seen` | DateTime64(3, 'UTC') | analyzer pass that opened the finding |
-- | `last_seen` | DateTime64(3, 'UTC') | last pass that saw the condition |
-- | `open_hours` | Float64 | hours from first_seen to last_seen |
-- | `gpus` | Float64 | GPUs concerned (a MIG instance counts as its slices / 7) |
-- | `waste_gpu_hours` | Float64 | GPU-hours wasted so far (since to last_seen) |
-- | `waste_cost` | Float64 | that waste at the price book's rate, in `currency` (wrong_card: what a smaller card would save) |
-- | `currency` | String | currency of waste_cost; empty when the card has no price |
-- | `evidence` | Map(String, Float64) | the figures that triggered it: window_minutes, active_fraction, … |
-- | `recommended` | String | wrong_card: the card type or MIG profile recommended |
-- | `recommendation` | String | what to do, in words |
-- | `episode` | UInt32 | 1 the first time; +1 each time the problem comes back after resolving |
-- | `version_at` | DateTime64(3, 'UTC') | the pass that wrote this version |

CREATE OR REPLACE VIEW {{.DB}}.findings_open {{.OnCluster}} AS
SELECT
    id,
    argMax(kind, updated_at)                         AS kind,
    argMax(state, updated_at)                        AS state,
    argMax(severity, updated_at)                     AS severity,
    argMax(cluster, updated_at)                      AS cluster,
    argMax(node, updated_at)                         AS node,
    argMax(job, updated_at)                          AS job,
    argMax(team, updated_at)                         AS team,
    argMax(project, updated_at)                      AS project,
    argMax(pool, updated_at)                         AS pool,
    argMax(card, updated_at)                         AS card,
    argMax(gpu_uuids, updated_at)                    AS gpu_uuids,
    argMax(pid, updated_at)                          AS pid,
    argMax(since, updated_at)                        AS since,
    argMax(first_seen, updated_at)                   AS first_seen,
    argMax(last_seen, updated_at)                    AS last_seen,
    dateDiff('second', first_seen, last_seen) / 3600 AS open_hours,
    evidence['gpus']                                 AS gpus,
    argMax(waste_gpu_hours, updated_at)              AS waste_gpu_hours,
    argMax(waste_cost, updated_at)                   AS waste_cost,
    argMax(currency, updated_at)                     AS currency,
    argMax(evidence, updated_at)                     AS evidence,
    argMax(recommended, updated_at)                  AS recommended,
    argMax(recommendation, updated_at)               AS recommendation,
    argMax(episode, updated_at)                      AS episode,
    max(updated_at)                                  AS version_at
FROM {{.DB}}.findings
GROUP BY id
HAVING state != 'resolved';
