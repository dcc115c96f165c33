-- 0005: the scheduler's audit trail.
--
-- One row per decision the scheduler takes — admit, borrow, reclaim, preempt,
-- requeue, stop, expire, notify, kill, cancel, recommend, skip (with why), reject —
-- whether it acted, dry-ran, skipped or failed. Rows are written once and never
-- changed. The scheduler reads the policy steps back at start, so that a restart
-- never acts on a finding twice (scheduler/policy_state.go).
--
-- * id is derived from the row's content and is the insert's deduplication token's
--   basis; ReplacingMergeTree on (ts, id) also folds a row recorded twice in two
--   inserts. Readers take one row per id (LIMIT 1 BY id): exact before merges too.
-- * PARTITION BY month of ts; no TTL: the audit trail is kept.
-- * On a cluster, rows are sharded by id.
--
-- Units: times are UTC with milliseconds; gpus and borrowed_gpus are GPUs (a MIG
-- instance counts as one).

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "actions"}} {{.OnCluster}}
(
    ts              DateTime64(3, 'UTC') COMMENT 'when the decision was taken',
    id              String COMMENT 'hash of the row content: the same decision recorded twice is one row',
    decision        LowCardinality(String) COMMENT 'admit, borrow, reclaim, preempt, requeue, stop, expire, notify, kill, cancel, recommend, skip, reject',
    outcome         LowCardinality(String) COMMENT 'ok (done), dry_run (would have been done), skipped (not done on purpose: see reason), failed (the executor failed: nothing moved)',
    reason          String COMMENT 'why, in words',
    policy          LowCardinality(String) COMMENT 'the policy whose step this is; empty for admission decisions',
    step            UInt16 COMMENT 'index of the policy step, 0 first',
    job             String COMMENT 'job key of the attempt acted on (scheduler jobs: sched/<team>/<n>[/<attempt>])',
    attempt         UInt32 COMMENT 'attempt number of that job key, 1 first; 0 when unknown',
    queue           LowCardinality(String),
    pool            LowCardinality(String),
    team            LowCardinality(String),
    project         LowCardinality(String),
    cluster         LowCardinality(String),
    node            LowCardinality(String) COMMENT 'node of the process (kill) or of the finding',
    pid             UInt32 COMMENT 'process killed (kill); 0 otherwise',
    card            LowCardinality(String) COMMENT 'card type given or asked for, e.g. H100-80GB',
    gpus            UInt32 COMMENT 'GPUs the decision concerns',
    borrowed_gpus   UInt32 COMMENT 'GPUs beyond the queue''s nominal quota (admit, borrow)',
    finding_id      String COMMENT 'finding acted on (findings.id); empty for admission decisions',
    finding_episode UInt32 COMMENT 'its episode (findings.episode)',
    finding_kind    LowCardinality(String) COMMENT 'idle, zombie, memory_bound, wrong_card, low_util',
    executor        LowCardinality(String) COMMENT 'who carried it out: sim, agent, kubernetes, slurm, none (recorded only)',
    tries           UInt16 COMMENT 'executor calls made, retries included',
    dry_run         UInt8 COMMENT '1 when the policy was in dry-run and nothing was changed',
    details         Map(LowCardinality(String), String) COMMENT 'more context: for (the job a reclaim made room for), grace, next_attempt, class (of a skip), …'
)
ENGINE = {{.Engine "ReplacingMergeTree"}}
PARTITION BY toYYYYMM(ts)
ORDER BY (ts, id)
SETTINGS {{.DedupWindow 10000}};

{{.Distributed "actions" "cityHash64(id)"}};
