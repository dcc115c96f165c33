-- 0019: process_samples merges one column at a time.
--
-- process_samples, ingest's busiest table, has ten columns: one fewer than the
-- engine's threshold for vertical merges (vertical_merge_algorithm_min_columns_to_activate,
-- 11), so its merges read and wrote every column of every part at once. A merge of
-- six to eight of ingest's 500,000-row parts held 48–54 MiB; merging the sort key's
-- columns first and then the others one by one, 24–33 MiB, at the same rate
-- (docs/measurements.md, Memory). The table's other settings and its data are
-- unchanged; running this again changes nothing.

ALTER TABLE {{.DB}}.{{.Local "process_samples"}} {{.OnCluster}}
    MODIFY SETTING vertical_merge_algorithm_min_columns_to_activate = 1;
