-- 0006: who asked for each change the scheduler's API made.
--
-- The HTTP API authenticates its callers (auth/) and writes every call that
-- changes something to the audit trail with the caller: the decisions submit (a
-- job queued), finish (a job reported done, failed or cancelled) and push (a
-- finding pushed or withdrawn), and reject with the caller who was refused.
-- actor is auth's method:name (token:alice, oidc:alice@example.com,
-- cert:node-17, none:anonymous); empty for the scheduler's own decisions and for
-- rows written before this migration.
--
-- ADD COLUMN IF NOT EXISTS makes the migration safe to run twice; on a cluster
-- the column is added to every server's local table and to the Distributed table
-- over them.

ALTER TABLE {{.DB}}.{{.Local "actions"}} {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS actor LowCardinality(String) DEFAULT '' COMMENT 'who asked for the change through the API (method:name); empty for the scheduler''s own decisions';

{{if .Cluster}}ALTER TABLE {{.DB}}.actions {{.OnCluster}}
    ADD COLUMN IF NOT EXISTS actor LowCardinality(String) DEFAULT '' COMMENT 'who asked for the change through the API (method:name); empty for the scheduler''s own decisions';{{end}}
