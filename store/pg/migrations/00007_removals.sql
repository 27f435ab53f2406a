-- Schema 7: the removals a recheck flip decided (store.Removal), paced and
-- claimed one at a time (owner: the replica working on it, '' none), and
-- the batches that wait for an admin's Remove all (store.RemovalBatch).
-- The change is additive: replicas still on schema 5 keep working (they
-- remove a flip's messages at once, as before).

-- +goose Up
CREATE TABLE removals (
    channel   text NOT NULL,
    source_ts text NOT NULL,
    held      boolean NOT NULL DEFAULT false,
    batch     text NOT NULL DEFAULT '',
    next_at   timestamptz NOT NULL,
    owner     text NOT NULL DEFAULT '',
    record    jsonb NOT NULL,
    PRIMARY KEY (channel, source_ts)
);
CREATE INDEX removals_due ON removals (held, next_at);
CREATE INDEX removals_batch ON removals (batch) WHERE batch <> '';
CREATE TABLE removal_batches (
    id      text PRIMARY KEY,
    created timestamptz NOT NULL,
    record  jsonb NOT NULL
);

-- +goose Down
DROP TABLE removal_batches;
DROP TABLE removals;
