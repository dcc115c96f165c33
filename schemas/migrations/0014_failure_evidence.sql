-- 0014: job_failures reads what the node's collector saw of an attempt's end.
--
-- The collector (collector/jobs.go) puts on a job's end event, besides the job's
-- own labels:
--   gpupool.io/oom-kills             processes of the job's cgroup the kernel's OOM
--                                    killer killed (cgroup v2 memory.events
--                                    oom_kill of the pod's or Slurm job's cgroup)
--   gpupool.io/gpu-ecc-uncorrected   uncorrectable (double-bit) ECC errors its GPUs
--                                    counted while it held them (DCGM
--                                    DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, NVML
--                                    nvmlDeviceGetTotalEccErrors)
--   gpupool.io/gpu-ecc-corrected     the corrected (single-bit) ones: kept with the
--                                    job, no reason of their own
--   gpupool.io/end-reason            the kubelet's container status (OOMKilled, …)
-- job_failures changes in three places, the rest is 0012's text (the job rollup):
-- * end_reason is the latest non-empty one of the attempt's end events (0010 took
--   the latest end event's, so a scheduler's end event without a reason hid the
--   collector's OOMKilled that came before it);
-- * oom_killed also when the cgroup counted an OOM kill (oom_kills > 0), unless the
--   attempt was cancelled: the host's OOM killer, with no scheduler to say so (a
--   bare process, or a pod whose kubelet the collector cannot ask);
-- * gpu_ecc also when a GPU of a failed attempt counted an uncorrectable ECC error
--   while the attempt held it, with or without the XID (48, 94, 95) the driver may
--   log for it.
-- Two columns are added at the end, oom_kills and ecc_uncorrected (0: none seen).
-- GPU out-of-memory (a CUDA OOM) leaves no trace in the cgroup or the ECC counters:
-- it ends as the program's own exit code (user_error, crashed) as before.
--
-- CREATE OR REPLACE keeps the view's name; re-run deploy/clickhouse/finance.sql
-- afterwards (replacing a view resets its SQL SECURITY).

CREATE OR REPLACE VIEW {{.DB}}.job_failures {{.OnCluster}} AS
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
        ev.oom_kills > 0 AND j.status != 'cancelled', 'oom_killed',
        ev.end_reason IN ('DeadlineExceeded', 'TIMEOUT'), 'time_limit',
        j.status = 'failed' AND ev.ecc_uncorrected > 0, 'gpu_ecc',
        j.status = 'failed' AND x.xid_samples > 0 AND xc.xid IN (48, 63, 64, 92, 94, 95), 'gpu_ecc',
        j.status = 'failed' AND x.xid_samples > 0, 'gpu_xid',
        j.status = 'failed' AND j.exit_code = 137, 'killed',
        j.status = 'failed' AND j.exit_code > 128 AND j.exit_code < 160, 'crashed',
        j.status = 'failed' AND j.exit_code > 0 AND j.exit_code < 128, 'user_error',
        j.status = 'cancelled', 'cancelled',
        'unknown') AS reason,
    c.gpu_hours AS gpu_hours, c.currency AS currency, c.cost AS cost,
    cj.failed_rerun AS failed_rerun,
    toUInt64(ev.oom_kills) AS oom_kills,
    toUInt64(ev.ecc_uncorrected) AS ecc_uncorrected
FROM {{.DB}}.jobs AS j
LEFT JOIN (SELECT cjb.job AS job, cjb.failed_rerun AS failed_rerun FROM {{.DB}}.chargeback_jobs AS cjb) AS cj ON cj.job = j.job
LEFT JOIN (
    SELECT e.job AS job,
           argMaxIf(e.labels['gpupool.io/end-reason'], e.ts, e.labels['gpupool.io/end-reason'] != '') AS end_reason,
           max(toUInt64OrZero(e.labels['gpupool.io/oom-kills'])) AS oom_kills,
           max(toUInt64OrZero(e.labels['gpupool.io/gpu-ecc-uncorrected'])) AS ecc_uncorrected
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
                  cp.silent_minutes_max, 0) AS silent
        FROM {{.DB}}.chargeback_job_priced AS cp
        INNER JOIN (SELECT jb.job AS job, jb.end_time AS end_time FROM {{.DB}}.jobs AS jb WHERE jb.state = 'ended') AS je
            ON je.job = cp.job
        WHERE cp.job != ''
    ) AS p
    GROUP BY p.job
) AS c ON c.job = j.job
WHERE j.state = 'ended';
