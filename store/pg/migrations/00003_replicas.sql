-- Schema 3: several replicas on one database. Each replica registers and
-- heartbeats in replicas; the jobs it recorded and the analyses it runs
-- carry its id as owner, so that when its heartbeat stops another replica
-- claims them (DB.OrphanJobs, DB.ClaimAnalysis). Rows written before this
-- schema have the owner '' (no live replica), so they are claimable.
-- The change is additive: replicas still on schema 2 keep working.

-- +goose Up
CREATE TABLE replicas (
    id        text PRIMARY KEY,
    started   timestamptz NOT NULL,
    heartbeat timestamptz NOT NULL
);
ALTER TABLE jobs ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE analyses ADD COLUMN owner text NOT NULL DEFAULT '';
CREATE INDEX jobs_owner ON jobs (owner, id);

-- +goose Down
DROP INDEX jobs_owner;
ALTER TABLE analyses DROP COLUMN owner;
ALTER TABLE jobs DROP COLUMN owner;
DROP TABLE replicas;
