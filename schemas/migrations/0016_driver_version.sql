-- 0016: the NVIDIA driver's version on every GPU sample (the console's Fleet page
-- shows it per node and GPU, so a fleet's mixed drivers can be seen before a job
-- fails on one).
--
-- The collector reads it once per GPU (NVML nvmlSystemGetDriverVersion, DCGM
-- DCGM_FI_DRIVER_VERSION) and sends it as a dictionary reference, like the model;
-- LowCardinality and one value per node for hours make it cost next to nothing on
-- disk. Samples from collectors that do not send it, and rows written before this
-- migration, read ''. ADD COLUMN IF NOT EXISTS makes it safe to run twice.

ALTER TABLE {{.DB}}.{{.Local "gpu_samples"}} {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS driver_version LowCardinality(String) DEFAULT '' COMMENT 'the NVIDIA driver version the GPU ran under, e.g. 570.86.15';

{{if .Cluster}}ALTER TABLE {{.DB}}.gpu_samples {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS driver_version LowCardinality(String) DEFAULT '' COMMENT 'the NVIDIA driver version the GPU ran under, e.g. 570.86.15';{{end}}
