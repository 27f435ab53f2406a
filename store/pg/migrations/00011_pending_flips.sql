-- Schema 11: the flips not announced yet (store.State.PendingFlips): a
-- recheck's verdict that changes a URL's level records the flip in the
-- same transaction; the recheck job deletes it once the cards show it and
-- its removals are queued. A replica that died in between leaves it, and
-- the next run announces it. The change is additive: replicas on schema 10
-- record no flips (their runs announce as before, not across a crash).

-- +goose Up
CREATE TABLE pending_flips (
    target text PRIMARY KEY REFERENCES targets (target) ON DELETE CASCADE,
    was    integer NOT NULL,
    at     timestamptz NOT NULL
);

-- +goose Down
DROP TABLE pending_flips;
