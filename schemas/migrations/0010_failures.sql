-- 0010: why attempts fail, and what failures cost.
--
-- job_failures gives every ended attempt a reason, from the evidence gpupool has,
-- checked in this order (the first that holds wins):
--   preempted    status preempted, or a preempt/reclaim the scheduler carried out
--                (actions, outcome ok)
--   stopped      a stop, kill or expire a scheduler policy carried out
--   node_lost    failed while its node's collector had gone silent: at least 5
--                minutes of its held time in the half hour before its end was
--                unmeasured (no sample), though the attempt was measured before
--   oom_killed   the scheduler said so: end label gpupool.io/end-reason OOMKilled
--                (kubelet) or OUT_OF_MEMORY (Slurm)
--   time_limit   end label DeadlineExceeded (Kubernetes) or TIMEOUT (Slurm)
--   gpu_ecc      an XID reporting an ECC error (48, 63, 64, 92, 94, 95) on its GPUs
--                from its start to 2 minutes after its end
--   gpu_xid      any other XID then (or one whose code the raw samples no longer hold)
--   killed       exit code 137 (SIGKILL) with no OOM evidence
--   crashed      another signal (exit code 129..159: SIGABRT 134, SIGSEGV 139, …)
--   user_error   exit code 1..127: the program itself gave up
--   cancelled    status cancelled
--   unknown      failed, and nothing above holds
--   ''           succeeded
-- XIDs are counted from the gpu_minute rollup (kept); their codes come from the raw
-- samples, so past the raw TTL an ECC XID shows as gpu_xid. Node silence is read
-- from chargeback_hourly, so it needs the hours refreshed, like every finance view.
-- failure_summary counts them per day, cluster, team, queue, pool, model, card and
-- reason, with their GPU-hours and cost, and the group's attempts for rates.

CREATE VIEW IF NOT EXISTS {{.DB}}.job_failures {{.OnCluster}} AS
SELECT
    j.job AS job, j.cluster AS cluster, j.team AS team, j.project AS project, j.queue AS queue,
    j.pool AS pool, j.model_name AS model_name,
    if(c.card != '', c.card, toString(j.card)) AS card,
    j.gpus AS requested_gpus, j.attempt AS attempt, j.status AS status, j.exit_code AS exit_code,
    toUInt8(if(j.exit_code > 128 AND j.exit_code < 160, j.exit_code - 128, 0)) AS signal,
    j.start_time AS start_time, j.end_time AS end_time,
    ev.end_reason AS end_reason,
    a.decision AS scheduler_decision,
    toUInt64(x.xid_samples) AS xid_samples,
    toUInt32(xc.xid) AS xid,
    c.silent_minutes AS silent_minutes,
    multiIf(
        j.status = 'succeeded', '',
        j.status = 'preempted' OR a.decision IN ('preempt', 'reclaim'), 'preempted',
        a.decision IN ('stop', 'kill', 'expire'), 'stopped',
        j.status = 'failed' AND c.silent_minutes >= 5 AND c.measured_gpu_hours > 0, 'node_lost',
        ev.end_reason IN ('OOMKilled', 'OUT_OF_MEMORY'), 'oom_killed',
        ev.end_reason IN ('DeadlineExceeded', 'TIMEOUT'), 'time_limit',
        j.status = 'failed' AND x.xid_samples > 0 AND xc.xid IN (48, 63, 64, 92, 94, 95), 'gpu_ecc',
        j.status = 'failed' AND x.xid_samples > 0, 'gpu_xid',
        j.status = 'failed' AND j.exit_code = 137, 'killed',
        j.status = 'failed' AND j.exit_code > 128 AND j.exit_code < 160, 'crashed',
        j.status = 'failed' AND j.exit_code > 0 AND j.exit_code < 128, 'user_error',
        j.status = 'cancelled', 'cancelled',
        'unknown') AS reason,
    c.gpu_hours AS gpu_hours, c.currency AS currency, c.cost AS cost,
    cj.failed_rerun AS failed_rerun
FROM {{.DB}}.jobs AS j
LEFT JOIN (SELECT cjb.job AS job, cjb.failed_rerun AS failed_rerun FROM {{.DB}}.chargeback_jobs AS cjb) AS cj ON cj.job = j.job
LEFT JOIN (
    SELECT e.job AS job, argMax(e.labels['gpupool.io/end-reason'], e.ts) AS end_reason
    FROM {{.DB}}.job_events AS e
    WHERE e.event = 'end'
    GROUP BY e.job
) AS ev ON ev.job = j.job
LEFT JOIN (
    SELECT ac.job AS job, groupUniqArray(toString(ac.decision)) AS ds,
           multiIf(has(ds, 'preempt'), 'preempt', has(ds, 'reclaim'), 'reclaim', has(ds, 'kill'), 'kill',
                   has(ds, 'stop'), 'stop', has(ds, 'expire'), 'expire', '') AS decision
    FROM {{.DB}}.actions AS ac
    WHERE ac.outcome = 'ok' AND ac.job != '' AND ac.decision IN ('preempt', 'reclaim', 'kill', 'stop', 'expire')
    GROUP BY ac.job
) AS a ON a.job = j.job
LEFT JOIN (
    SELECT jg.job AS job, sum(m.n) AS xid_samples
    FROM (
        SELECT jb.job AS job, arrayJoin(jb.gpu_uuids) AS gpu_uuid, jb.start_time AS start_time, jb.end_time AS end_time
        FROM {{.DB}}.jobs AS jb
        WHERE jb.state = 'ended' AND jb.start_time IS NOT NULL
    ) AS jg
    INNER JOIN (
        SELECT toString(g.gpu_uuid) AS gpu_uuid, g.minute AS minute, sum(g.xid_samples) AS n
        FROM {{.DB}}.gpu_minute AS g
        WHERE g.xid_samples > 0
        GROUP BY gpu_uuid, minute
    ) AS m ON m.gpu_uuid = jg.gpu_uuid
    WHERE m.minute >= toStartOfMinute(assumeNotNull(jg.start_time)) AND m.minute <= assumeNotNull(jg.end_time) + INTERVAL 2 MINUTE
    GROUP BY jg.job
) AS x ON x.job = j.job
LEFT JOIN (
    SELECT jg.job AS job, argMax(s.xid, s.ts) AS xid
    FROM (
        SELECT jb.job AS job, arrayJoin(jb.gpu_uuids) AS gpu_uuid, jb.start_time AS start_time, jb.end_time AS end_time
        FROM {{.DB}}.jobs AS jb
        WHERE jb.state = 'ended' AND jb.start_time IS NOT NULL
    ) AS jg
    INNER JOIN (
        SELECT toString(gs.gpu_uuid) AS gpu_uuid, gs.ts AS ts, gs.xid AS xid
        FROM {{.DB}}.gpu_samples AS gs
        WHERE gs.xid != 0
    ) AS s ON s.gpu_uuid = jg.gpu_uuid
    WHERE s.ts >= assumeNotNull(jg.start_time) AND s.ts <= assumeNotNull(jg.end_time) + INTERVAL 2 MINUTE
    GROUP BY jg.job
) AS xc ON xc.job = j.job
LEFT JOIN (
    SELECT p.job AS job, toString(any(p.card)) AS card,
           sum(p.gpu_hours) AS gpu_hours,
           sum(p.used_gpu_hours) + sum(p.idle_gpu_hours) AS measured_gpu_hours,
           anyIf(p.currency, p.priced = 1) AS currency,
           if(countIf(p.priced = 0) > 0 OR uniqExactIf(p.currency, p.priced = 1) > 1, NULL, sum(p.cost)) AS cost,
           max(p.silent) AS silent_minutes
    FROM (
        SELECT cp.job AS job, cp.card AS card, cp.gpu_hours AS gpu_hours, cp.used_gpu_hours AS used_gpu_hours,
               cp.idle_gpu_hours AS idle_gpu_hours, cp.priced AS priced, cp.currency AS currency, cp.cost AS cost,
               if(cp.hour >= toStartOfHour(assumeNotNull(je.end_time) - INTERVAL 30 MINUTE),
                  60 * cp.unmeasured_gpu_hours / cp.gpu_weight, 0) AS silent
        FROM {{.DB}}.chargeback_priced AS cp
        INNER JOIN (SELECT jb.job AS job, jb.end_time AS end_time FROM {{.DB}}.jobs AS jb WHERE jb.state = 'ended') AS je
            ON je.job = cp.job
        WHERE cp.job != ''
    ) AS p
    GROUP BY p.job
) AS c ON c.job = j.job
WHERE j.state = 'ended';

CREATE VIEW IF NOT EXISTS {{.DB}}.failure_summary {{.OnCluster}} AS
SELECT
    toDate(assumeNotNull(f.end_time))                 AS day,
    f.cluster                                         AS cluster,
    f.team                                            AS team,
    f.queue                                           AS queue,
    f.pool                                            AS pool,
    f.model_name                                      AS model_name,
    f.card                                            AS card,
    f.reason                                          AS reason,
    count()                                           AS attempts,
    sum(count()) OVER (PARTITION BY day, cluster, team, queue, pool, model_name, card) AS group_attempts,
    attempts / group_attempts                         AS share,
    sum(f.gpu_hours)                                  AS gpu_hours,
    anyIf(f.currency, f.currency != '')               AS currency,
    if(countIf(f.cost IS NULL AND f.gpu_hours > 0) > 0 OR uniqExactIf(f.currency, f.currency != '') > 1,
       NULL, ifNull(sum(f.cost), 0))                  AS cost,
    countIf(f.failed_rerun = 1)                       AS rerun_attempts,
    sumIf(f.gpu_hours, f.failed_rerun = 1)            AS failed_rerun_gpu_hours,
    if(countIf(f.failed_rerun = 1 AND f.cost IS NULL AND f.gpu_hours > 0) > 0
       OR uniqExactIf(f.currency, f.failed_rerun = 1 AND f.currency != '') > 1,
       NULL, ifNull(sumIf(f.cost, f.failed_rerun = 1), 0)) AS failed_rerun_cost
FROM {{.DB}}.job_failures AS f
GROUP BY day, cluster, team, queue, pool, model_name, card, reason;
