-- 0025: the scheduler's fragmentation figure over time (issue 44).
--
-- When the scheduler places jobs on nodes it knows, per cluster and card type,
-- the whole GPUs, the free ones and the stranded ones: free GPUs on nodes where
-- no queued job's shape fits (placement.State.Fragmentation). It writes that
-- figure here at most every scheduler.fragmentation_every (1m; 0: never), after
-- a pass, through its audit recorder (batched, in the background). The
-- fragmentation_hourly view integrates it into stranded GPU-hours.
--
-- * One row per sample, cluster and card; ReplacingMergeTree on
--   (cluster, card, ts) folds a sample recorded twice, and readers take one row
--   per (cluster, card, ts) (LIMIT 1 BY): exact before merges too.
-- * PARTITION BY month of ts; no TTL (a row a minute per cluster and card).
-- * On a cluster, rows are sharded by cluster and card.
--
-- Units: times are UTC with milliseconds; every count is whole GPUs (fractions
-- and MIG instances are not counted, a shared GPU is not free).

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "scheduler_fragmentation"}} {{.OnCluster}}
(
    ts              DateTime64(3, 'UTC') COMMENT 'when the scheduler took the figure (after a pass)',
    cluster         LowCardinality(String),
    card            LowCardinality(String) COMMENT 'card type, e.g. H100-80GB',
    gpus            UInt32 COMMENT 'whole GPUs of the cluster and card on the nodes the scheduler places on',
    free            UInt32 COMMENT 'of which no job holds',
    stranded        UInt32 COMMENT 'of the free, those on nodes where no queued job''s shape fits; 0 when nothing waits for the cluster and card',
    waiting         UInt32 COMMENT 'queued requests that may use the cluster and card',
    free_nodes      UInt32 COMMENT 'nodes with every whole GPU free',
    largest_on_node UInt32 COMMENT 'the most free GPUs on one node: the largest gang that could start now without crossing nodes'
)
ENGINE = {{.Engine "ReplacingMergeTree"}}
PARTITION BY toYYYYMM(ts)
ORDER BY (cluster, card, ts)
SETTINGS {{.DedupWindow 10000}};

{{.Distributed "scheduler_fragmentation" "cityHash64(cluster, card)"}};
