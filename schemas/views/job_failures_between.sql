-- `job_failures` for the attempts that ended in a period, computed for those alone: a
-- parameterised view (migration 0018) whose sources (end events, the scheduler's
-- decisions, XIDs, the priced chargeback rows) are read for the period's attempts
-- only, so a day's failures do not cost a classification of every attempt in the
-- store. `job_failures` is this view over all time; the columns and the taxonomy are
-- the same. The report and the console's chargeback page read it.
--
-- ```sql
-- SELECT reason, count() AS attempts, sum(cost) AS cost
-- FROM job_failures_between(from = '2026-11-30 00:00:00', to = '2026-12-01 00:00:00')
-- GROUP BY reason
-- ```
--
-- `from` and `to` are `DateTime64(3, 'UTC')`: an attempt is in the period when its
-- `end_time` is at or after `from` and before `to`.

CREATE OR REPLACE VIEW {{.DB}}.job_failures_between {{.OnCluster}} AS
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
        j.status = 'failed' AND x.xid_samples > 0 AND xc.xid NOT IN (13, 31, 43), 'gpu_xid',
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
LEFT JOIN (
    SELECT cjb.job AS job, cjb.failed_rerun AS failed_rerun FROM {{.DB}}.chargeback_jobs AS cjb
    WHERE cjb.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
) AS cj ON cj.job = j.job
LEFT JOIN (
    SELECT e.job AS job,
           argMaxIf(e.labels['gpupool.io/end-reason'], e.ts, e.labels['gpupool.io/end-reason'] != '') AS end_reason,
           max(toUInt64OrZero(e.labels['gpupool.io/oom-kills'])) AS oom_kills,
           max(toUInt64OrZero(e.labels['gpupool.io/gpu-ecc-uncorrected'])) AS ecc_uncorrected
    FROM {{.DB}}.job_events AS e
    WHERE e.event = 'end' AND e.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
    GROUP BY e.job
) AS ev ON ev.job = j.job
LEFT JOIN (
    SELECT ac.job AS job, groupUniqArray(toString(ac.decision)) AS ds,
           multiIf(has(ds, 'preempt'), 'preempt', has(ds, 'reclaim'), 'reclaim', has(ds, 'kill'), 'kill',
                   has(ds, 'stop'), 'stop', has(ds, 'expire'), 'expire', '') AS decision
    FROM {{.DB}}.actions AS ac
    WHERE ac.outcome = 'ok' AND ac.job != '' AND ac.decision IN ('preempt', 'reclaim', 'kill', 'stop', 'expire')
      AND ac.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
    GROUP BY ac.job
) AS a ON a.job = j.job
LEFT JOIN (
    SELECT jg.job AS job, sum(m.n) AS xid_samples
    FROM (
        SELECT jb.job AS job, arrayJoin(jb.gpu_uuids) AS gpu_uuid, jb.start_time AS start_time, jb.end_time AS end_time
        FROM {{.DB}}.jobs AS jb
        WHERE jb.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
          AND jb.state = 'ended' AND jb.start_time IS NOT NULL AND jb.end_time >= {from:DateTime64(3, 'UTC')} AND jb.end_time < {to:DateTime64(3, 'UTC')}
    ) AS jg
    INNER JOIN (
        SELECT toString(g.gpu_uuid) AS gpu_uuid, g.minute AS minute, sum(g.xid_samples) AS n
        FROM {{.DB}}.gpu_minute AS g
        WHERE g.xid_samples > 0 AND g.minute >= toStartOfMinute(assumeNotNull((SELECT min(ps.ts) FROM {{.DB}}.job_events AS ps WHERE ps.event = 'start' AND ps.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')}))))
          AND g.minute <= {to:DateTime64(3, 'UTC')} + INTERVAL 2 MINUTE
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
        WHERE jb.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
          AND jb.state = 'ended' AND jb.start_time IS NOT NULL AND jb.end_time >= {from:DateTime64(3, 'UTC')} AND jb.end_time < {to:DateTime64(3, 'UTC')}
    ) AS jg
    INNER JOIN (
        SELECT toString(gs.gpu_uuid) AS gpu_uuid, gs.ts AS ts, gs.xid AS xid
        FROM {{.DB}}.gpu_samples AS gs
        WHERE gs.xid != 0 AND gs.ts >= assumeNotNull((SELECT min(ps.ts) FROM {{.DB}}.job_events AS ps WHERE ps.event = 'start' AND ps.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')}))) AND gs.ts <= {to:DateTime64(3, 'UTC')} + INTERVAL 2 MINUTE
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
        INNER JOIN (
            SELECT jb.job AS job, jb.end_time AS end_time FROM {{.DB}}.jobs AS jb
            WHERE jb.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
              AND jb.state = 'ended' AND jb.end_time >= {from:DateTime64(3, 'UTC')} AND jb.end_time < {to:DateTime64(3, 'UTC')}
        ) AS je ON je.job = cp.job
        WHERE cp.job != '' AND cp.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
          AND cp.hour >= toStartOfHour(assumeNotNull((SELECT min(ps.ts) FROM {{.DB}}.job_events AS ps WHERE ps.event = 'start' AND ps.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})))) AND cp.hour < {to:DateTime64(3, 'UTC')}
    ) AS p
    GROUP BY p.job
) AS c ON c.job = j.job
WHERE j.job IN (SELECT pe.job FROM {{.DB}}.job_events AS pe WHERE pe.event IN ('end', 'preempt') AND pe.ts >= {from:DateTime64(3, 'UTC')} AND pe.ts < {to:DateTime64(3, 'UTC')})
  AND j.state = 'ended' AND j.end_time >= {from:DateTime64(3, 'UTC')} AND j.end_time < {to:DateTime64(3, 'UTC')};
