-- 0013: a shared GPU's tenants are judged by their own processes' activity.
--
-- On a GPU several job attempts hold at once (time-slicing, MPS) the GPU's samples
-- are every tenant's together, so chargeback judges each tenant's used and idle
-- time from its own processes' samples: process_minute gains, per (GPU, job,
-- minute), the process samples that carry a per-process SM figure and those of
-- them that were active (the process's SM or memory-bandwidth share at least 1 %,
-- the rollups' fixed threshold, as for a GPU sample). A tenant with no such figure
-- in a minute is judged by its GPU's samples in that minute, as the analyzer's
-- idle-tenant detection judges it. Rows written before this migration have no
-- judged samples and so keep the GPU's activity.
--
-- chargeback_settings says how a shared GPU's time is split among its tenants,
-- effective from an hour on (the hour's setting is the row in effect at its
-- start): 'memory' (the default, and with no row) by the memory each held,
-- 'activity' by each one's active process samples (memory share when no tenant
-- was active or one has no per-process figure). docs/finance.md says why.
-- ADD COLUMN IF NOT EXISTS, MODIFY QUERY and CREATE TABLE IF NOT EXISTS make it
-- safe to run twice.

ALTER TABLE {{.DB}}.{{.Local "process_minute"}} {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS judged_samples SimpleAggregateFunction(sum, UInt64) DEFAULT 0 COMMENT 'process samples with a per-process SM figure (judged by their own activity)' CODEC(T64, ZSTD(1)),
    ADD COLUMN IF NOT EXISTS active_samples SimpleAggregateFunction(sum, UInt64) DEFAULT 0 COMMENT 'judged samples whose SM or memory-bandwidth share reached 1 %' CODEC(T64, ZSTD(1));

{{if .Cluster}}ALTER TABLE {{.DB}}.process_minute {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS judged_samples SimpleAggregateFunction(sum, UInt64) DEFAULT 0,
    ADD COLUMN IF NOT EXISTS active_samples SimpleAggregateFunction(sum, UInt64) DEFAULT 0;{{end}}

ALTER TABLE {{.DB}}.process_minute_mv {{.OnCluster}} MODIFY QUERY
SELECT
    toStartOfMinute(ts)                  AS minute,
    gpu_uuid,
    job,
    any(cluster)                         AS cluster,
    any(node)                            AS node,
    count()                              AS samples,
    sum(toUInt64(fb_used_mib))           AS fb_used_mib_sum,
    max(fb_used_mib)                     AS fb_used_mib_max,
    sum(toFloat64(ifNull(sm_util, 0)))   AS sm_util_sum,
    count(sm_util)                       AS sm_util_samples,
    sum(toFloat64(ifNull(mem_util, 0)))  AS mem_util_sum,
    count(mem_util)                      AS mem_util_samples,
    count(sm_util)                       AS judged_samples,
    countIf(sm_util IS NOT NULL AND greatest(ifNull(sm_util, 0), ifNull(mem_util, 0)) >= 0.01) AS active_samples
FROM {{.DB}}.{{.Local "process_samples"}}
GROUP BY gpu_uuid, job, minute;

CREATE TABLE IF NOT EXISTS {{.DB}}.{{.Local "chargeback_settings"}} {{.OnCluster}}
(
    effective_from DateTime('UTC') COMMENT 'the setting applies to the hours that start at or after it (UTC)',
    shared_split   LowCardinality(String) COMMENT 'how a shared GPU is split among its tenants: memory or activity',
    note           String DEFAULT '' COMMENT 'who decided and why',
    set_at         DateTime64(3, 'UTC') DEFAULT now64(3) COMMENT 'when the row was written; the latest row of an effective_from wins'
)
ENGINE = {{.Engine "MergeTree"}}
ORDER BY effective_from;

{{.Distributed "chargeback_settings" "rand()"}};
