-- Schema 12: the workspaces of an Enterprise Grid install
-- (store.State.PutWorkspaces): one row per team the app was granted, kept
-- (granted false) once access is revoked, so that every replica learns of
-- the revocation. PutWorkspaces upserts the rows in one transaction,
-- keeping `changed` when `granted` is unchanged. Card records
-- (cards.record, jsonb) gain the key "team": no DDL, records without it
-- read as "".
--
-- The change is additive: replicas on schema 11 read and write no table
-- or column that changed, and keep watching one workspace as before. One
-- thing is lost while both run: a card record that an old replica
-- rewrites (a verdict, a recheck) loses its "team" key, since it decodes
-- the record into a type without it; its TeamID reads "" from then on,
-- as for a card written before.

-- +goose Up
CREATE TABLE workspaces (
    team_id       text PRIMARY KEY,
    enterprise_id text NOT NULL DEFAULT '',
    name          text NOT NULL DEFAULT '',
    domain        text NOT NULL DEFAULT '',
    granted       boolean NOT NULL,
    changed       timestamptz NOT NULL
);

-- +goose Down
DROP TABLE workspaces;
