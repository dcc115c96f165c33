-- internal: not in docs/finance.md

CREATE OR REPLACE VIEW {{.DB}}.jobs {{.OnCluster}} AS
SELECT
    job,
    argMaxIf(source, ts, source != '')              AS source,
    argMaxIf(cluster, ts, cluster != '')            AS cluster,
    argMaxIf(team, ts, team != '')                  AS team,
    argMaxIf(project, ts, project != '')            AS project,
    argMaxIf(queue, ts, queue != '')                AS queue,
    argMaxIf(pool, ts, pool != '')                  AS pool,
    argMaxIf(model_name, ts, model_name != '')      AS model_name,
    argMaxIf(workload, ts, workload != '')          AS workload,
    argMaxIf(gpus, ts, gpus > 0)                    AS gpus,
    argMaxIf(card, ts, card != '')                  AS card,
    argMaxIf(mig_profile, ts, mig_profile != '')    AS mig_profile,
    argMaxIf(mig_instances, ts, mig_instances > 0)  AS mig_instances,
    argMaxIf(gpu_fraction, ts, gpu_fraction > 0)    AS gpu_fraction,
    argMaxIf(sharing, ts, sharing != '')            AS sharing,
    argMaxIf(nodes, ts, notEmpty(nodes))            AS nodes,
    argMaxIf(gpu_uuids, ts, notEmpty(gpu_uuids))    AS gpu_uuids,
    minIfOrNull(ts, event = 'submit')               AS submit_time,
    minIfOrNull(ts, event = 'admit')                AS admit_time,
    minIfOrNull(ts, event = 'start')                AS start_time,
    maxIfOrNull(ts, event IN ('end', 'preempt'))    AS end_time,
    argMaxIf(status, ts, status != '')              AS status,
    argMaxIf(exit_code, ts, event = 'end')          AS exit_code,
    max(attempt)                                    AS attempt,
    argMaxIf(rerun_of, ts, rerun_of != '')          AS rerun_of,
    argMaxIf(labels, ts, notEmpty(labels))          AS labels,
    multiIf(end_time IS NOT NULL, 'ended', start_time IS NOT NULL, 'running', 'queued') AS state,
    max(ts)                                         AS updated_at
FROM {{.DB}}.job_events
GROUP BY job;
