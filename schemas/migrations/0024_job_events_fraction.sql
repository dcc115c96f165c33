-- 0024: job events of GPU fractions (issue 44).
--
-- The scheduler admits jobs onto a share of one GPU (gpu_fraction thousandths,
-- shared by timeslice or mps). Such a job's events carry the fraction and the
-- sharing mode, and gpus 0, so that nothing that counts a job's GPUs (the jobs
-- view's gpus, chargeback_jobs' requested_gpus and the queue-wait GPU-hours
-- priced from it) counts a share as a whole GPU. Rows written before this
-- migration read 0 and '': jobs of whole GPUs or MIG instances. Running this
-- again changes nothing.

ALTER TABLE {{.DB}}.{{.Local "job_events"}} {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS gpu_fraction UInt32 DEFAULT 0 COMMENT 'a job of a share of one GPU: thousandths (1-999); gpus is then 0',
    ADD COLUMN IF NOT EXISTS sharing LowCardinality(String) DEFAULT '' COMMENT 'that share''s sharing mode: timeslice or mps';

{{if .Cluster}}ALTER TABLE {{.DB}}.job_events {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS gpu_fraction UInt32 DEFAULT 0,
    ADD COLUMN IF NOT EXISTS sharing LowCardinality(String) DEFAULT '';{{end}}
