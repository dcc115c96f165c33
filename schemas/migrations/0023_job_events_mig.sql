-- 0023: job events of MIG instances (issue 36).
--
-- The scheduler admits jobs onto MIG instances (a job asks mig_profile
-- instances of a card). Such a job's events carry the profile and the instance
-- count, and gpus 0, so that nothing that counts a job's GPUs (the jobs view's
-- gpus, chargeback_jobs' requested_gpus and the queue-wait GPU-hours priced
-- from it) counts an instance as a whole GPU. Rows written before this
-- migration read '' and 0: jobs of whole GPUs. Running this again changes
-- nothing.

ALTER TABLE {{.DB}}.{{.Local "job_events"}} {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS mig_profile LowCardinality(String) DEFAULT '' COMMENT 'a job of MIG instances: their profile, e.g. 1g.10gb; gpus is then 0',
    ADD COLUMN IF NOT EXISTS mig_instances UInt32 DEFAULT 0 COMMENT 'MIG instances of mig_profile requested';

{{if .Cluster}}ALTER TABLE {{.DB}}.job_events {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS mig_profile LowCardinality(String) DEFAULT '',
    ADD COLUMN IF NOT EXISTS mig_instances UInt32 DEFAULT 0;{{end}}
