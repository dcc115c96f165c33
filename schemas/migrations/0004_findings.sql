-- 0004: analyzer findings and the findings_open finance view.
--
-- The analyzer (analyzer/findings) writes one row per finding version: the pass that
-- first sees a problem writes state 'open', every later pass that still sees it writes
-- state 'updated' (last_seen, evidence and waste grown), and the pass that finds it
-- gone for the grace period writes state 'resolved'. A problem that comes back after
-- being resolved keeps its id and starts a new episode.
--
-- * ReplacingMergeTree(updated_at) keyed by (kind, id, episode): merges keep the latest
--   version of every episode, so the table settles to one row per episode (the
--   history finance and engineers query), while unmerged versions are still there.
--   Readers take the latest version with argMax(…, updated_at), which is exact before
--   merges too: nothing here needs FINAL.
-- * PARTITION BY the episode's first_seen month: first_seen never changes within an
--   episode, so all versions of an episode share a partition and replace each other.
-- * No TTL: findings are the audit trail of what was wasted and billed.
-- * A pass inserts its versions in one block with a deduplication token derived from
--   the pass time and the versions, so a retried pass cannot write them twice.
-- * On a cluster, rows are sharded by id so that all versions of a finding meet on one
--   shard (replacement is per shard).
--
-- Units: times are UTC with milliseconds; waste_gpu_hours are GPU-hours (a MIG
-- instance counts as its compute slices / 7 of a GPU); waste_cost is in currency.

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "findings"}} {{.OnCluster}}
(
    id              String COMMENT 'stable id of the problem: hash of kind and job (idle, memory_bound, wrong_card, low_util) or of kind, node, GPU, PID and job (zombie)',
    kind            LowCardinality(String) COMMENT 'idle, zombie, memory_bound, wrong_card, low_util',
    state           LowCardinality(String) COMMENT 'open (first version of an episode), updated, resolved',
    episode         UInt32 COMMENT '1 the first time the problem is seen, +1 each time it comes back after being resolved',
    severity        LowCardinality(String) COMMENT 'info (optimisation hint), warning, critical (waste past the configured GPU-hours)',
    cluster         LowCardinality(String),
    node            LowCardinality(String) COMMENT 'node of the first GPU',
    job             String COMMENT 'job key; empty for a process no scheduler knows',
    team            LowCardinality(String),
    project         LowCardinality(String),
    pool            LowCardinality(String),
    card            LowCardinality(String) COMMENT 'card type of the GPUs, e.g. H100-80GB (a MIG instance has its parent card type)',
    gpu_uuids       Array(String) COMMENT 'GPUs (GPU-… or MIG-…) the finding is about',
    pid             UInt32 COMMENT 'process id, for a zombie; 0 otherwise',
    since           DateTime64(3, 'UTC') COMMENT 'estimated start of the condition (waste is counted from here)',
    first_seen      DateTime64(3, 'UTC') COMMENT 'analyzer pass that opened this episode',
    last_seen       DateTime64(3, 'UTC') COMMENT 'last analyzer pass that saw the condition',
    resolved_at     Nullable(DateTime64(3, 'UTC')) COMMENT 'analyzer pass that resolved it; NULL while open',
    updated_at      DateTime64(3, 'UTC') COMMENT 'analyzer pass that wrote this version (the version column)',
    waste_gpu_hours Float64 COMMENT 'GPU-hours wasted from since to last_seen',
    waste_cost      Float64 COMMENT 'waste_gpu_hours priced at the price book rate of card (wrong_card: the saving a smaller card would have made)',
    currency        LowCardinality(String) COMMENT 'currency of waste_cost, from the price book; empty when unpriced',
    evidence        Map(LowCardinality(String), Float64) COMMENT 'figures that triggered the finding: window_minutes, samples, active_fraction, …',
    recommended     LowCardinality(String) COMMENT 'wrong_card: the card type or MIG profile recommended',
    recommendation  String COMMENT 'what to do, in words'
)
ENGINE = {{.Engine "ReplacingMergeTree" "updated_at"}}
PARTITION BY toYYYYMM(first_seen)
ORDER BY (kind, id, episode)
SETTINGS {{.DedupWindow 1000}};

{{.Distributed "findings" "cityHash64(id)"}};

-- findings_open: every finding open now, its latest version, one row per finding.
-- Stable columns for finance (add columns at the end; never rename or change units):
--   id, kind, severity, cluster, node, job, team, project, pool, card, gpu_uuids, pid
--   state                           open (first pass of the episode) or updated
--   since, first_seen, last_seen   DateTime64(3, 'UTC')
--   open_hours                      hours from first_seen to last_seen
--   gpus                            GPUs concerned (MIG instances count as slices / 7)
--   waste_gpu_hours                 GPU-hours wasted so far (since → last_seen)
--   waste_cost, currency            that waste at the price book's rate
--   evidence, recommended, recommendation, episode
--   version_at                      DateTime64(3, 'UTC'), the pass that wrote the latest version
-- The view findings_open this migration (re)defined is now schemas/views/findings_open.sql, re-applied on every migrate.
