-- The scheduler's audit trail: every decision it took or recorded (admissions,
-- borrowing, reclaims, policy steps on findings, the API's changes), newest last. An
-- action recorded again (a retry) has several rows with the same `id`: the latest `ts`
-- is its outcome. The console's actions list and finding pages read it.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `ts` | DateTime64(3, 'UTC') | when the decision was taken |
-- | `id` | String | the action's id |
-- | `decision` | LowCardinality(String) | admit, borrow, reclaim, preempt, requeue, stop, expire, notify, kill, cancel, recommend, skip, reject |
-- | `outcome` | LowCardinality(String) | ok, dry_run (would have been done), skipped (see reason), failed |
-- | `reason` | String | why, in words |
-- | `policy` | LowCardinality(String) | the policy whose step this is; empty for admission decisions |
-- | `step` | UInt16 | index of the policy step, 0 first |
-- | `job` | String | job key of the attempt acted on |
-- | `attempt` | UInt32 | attempt number of that job key, 1 first; 0 when unknown |
-- | `queue` | LowCardinality(String) | queue |
-- | `pool` | LowCardinality(String) | pool |
-- | `team` | LowCardinality(String) | team |
-- | `project` | LowCardinality(String) | project |
-- | `cluster` | LowCardinality(String) | cluster |
-- | `node` | LowCardinality(String) | node of the process (kill) or of the finding |
-- | `pid` | UInt32 | process killed (kill); 0 otherwise |
-- | `card` | LowCardinality(String) | card type given or asked for |
-- | `gpus` | UInt32 | GPUs the decision concerns |
-- | `borrowed_gpus` | UInt32 | GPUs beyond the queue's nominal quota (admit, borrow) |
-- | `finding_id` | String | finding acted on (`finding_history.id`); empty for admission decisions |
-- | `finding_episode` | UInt32 | its episode |
-- | `finding_kind` | LowCardinality(String) | its kind |
-- | `executor` | LowCardinality(String) | who carried it out: sim, agent, kubernetes, slurm, none (recorded only) |
-- | `tries` | UInt16 | executor calls made, retries included |
-- | `dry_run` | UInt8 | 1 when the policy was in dry-run and nothing was changed |
-- | `details` | Map(LowCardinality(String), String) | more context: for (the job a reclaim made room for), grace, next_attempt, … |
-- | `actor` | LowCardinality(String) | who asked for the change through the API (method:name); empty for the scheduler's own decisions |

CREATE OR REPLACE VIEW {{.DB}}.actions_log {{.OnCluster}} AS
SELECT
    ts, id, decision, outcome, reason, policy, step, job, attempt, queue, pool, team, project,
    cluster, node, pid, card, gpus, borrowed_gpus, finding_id, finding_episode, finding_kind,
    executor, tries, dry_run, details, actor
FROM {{.DB}}.actions;
