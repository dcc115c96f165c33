-- Every version the analyzer wrote of every finding, open and resolved: a finding
-- (`id`) is written again at each pass that still sees it, and each time it comes back
-- after resolving it opens a new `episode`. The latest version of an episode is the one
-- with the greatest `updated_at`; `findings_open` has the latest of the open ones. The
-- billing report reads the episodes of its period from it, and the console its teams.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `id` | String | stable id of the problem (the same across passes) |
-- | `kind` | LowCardinality(String) | idle, zombie, memory_bound, wrong_card, low_util, compute_bound |
-- | `state` | LowCardinality(String) | open (first version of an episode), updated, resolved |
-- | `episode` | UInt32 | 1 the first time; +1 each time the problem comes back after resolving |
-- | `severity` | LowCardinality(String) | info (a hint), warning, critical |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `node` | LowCardinality(String) | node of the first GPU |
-- | `job` | String | job key; empty for a process no scheduler knows |
-- | `team` | LowCardinality(String) | owning team |
-- | `project` | LowCardinality(String) | project |
-- | `pool` | LowCardinality(String) | pool |
-- | `card` | LowCardinality(String) | card type, e.g. H100-80GB |
-- | `gpu_uuids` | Array(String) | GPUs (GPU-… or MIG-…) concerned |
-- | `pid` | UInt32 | process id, for a zombie; 0 otherwise |
-- | `since` | DateTime64(3, 'UTC') | estimated start of the condition; waste counts from here |
-- | `first_seen` | DateTime64(3, 'UTC') | analyzer pass that opened the episode |
-- | `last_seen` | DateTime64(3, 'UTC') | last pass that saw the condition |
-- | `resolved_at` | Nullable(DateTime64(3, 'UTC')) | pass that resolved it; NULL while open |
-- | `updated_at` | DateTime64(3, 'UTC') | pass that wrote this version |
-- | `waste_gpu_hours` | Float64 | GPU-hours wasted from since to last_seen |
-- | `waste_cost` | Float64 | that waste at the price book's rate, in `currency` (wrong_card: what a smaller card would save) |
-- | `currency` | LowCardinality(String) | currency of waste_cost; empty when the card has no price |
-- | `evidence` | Map(LowCardinality(String), Float64) | the figures that triggered it: window_minutes, active_fraction, gpus, … |
-- | `recommended` | LowCardinality(String) | wrong_card: the card type or MIG profile recommended |
-- | `recommendation` | String | what to do, in words |

CREATE OR REPLACE VIEW {{.DB}}.finding_history {{.OnCluster}} AS
SELECT
    id, kind, state, episode, severity, cluster, node, job, team, project, pool, card,
    gpu_uuids, pid, since, first_seen, last_seen, resolved_at, updated_at,
    waste_gpu_hours, waste_cost, currency, evidence, recommended, recommendation
FROM {{.DB}}.findings;
