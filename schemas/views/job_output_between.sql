-- `job_output` for the attempts that ended in a period, each source read for those
-- alone (migration 0018), with the same columns: `job_output_between(from = …, to =
-- …)`, an attempt in the period when its `end_time` is at or after `from` and before
-- `to`. The report and the console's chargeback page read it.

CREATE OR REPLACE VIEW {{.DB}}.job_output_between {{.OnCluster}} AS
{{template "job_output_select" between . true}};
