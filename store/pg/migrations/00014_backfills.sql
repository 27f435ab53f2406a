-- Schema 14: the backfills (store.State.StartBackfill, issue 25): one row
-- per channel whose recent history is, or was, scanned, with where the
-- reading stands, so that a restart or another replica resumes it.
--
-- The backfill is columns, not a jsonb record, for the reason 00013 gives:
-- it is flat, and what it is found and pruned by (its state, its last
-- update) are columns with an index. A replica that does not know a column
-- added later leaves that column as it is when it updates the others,
-- where a jsonb record it rewrote would lose the keys it does not know.
--
-- StartBackfill inserts the row (ON CONFLICT DO NOTHING) or locks the one
-- there (SELECT … FOR UPDATE) and replaces it only when it is finished;
-- ClaimBackfill locks the row and takes the claim (owner, owned_until, a
-- lease) only when it is free, expired or the caller's: concurrent
-- starters and claimants, on any replica, wait for the lock and see the
-- winner's row. state is not constrained to the states known today, so
-- that a later one needs no migration.
--
-- The change is additive: replicas on schema 13 read and write no table
-- or column that changed.

-- +goose Up
CREATE TABLE backfills (
    channel       text PRIMARY KEY,
    since_at      timestamptz NOT NULL,
    until_at      timestamptz NOT NULL,
    started_by    text NOT NULL DEFAULT '',
    state         text NOT NULL,
    next_cursor   text NOT NULL DEFAULT '',
    thread_ts     text NOT NULL DEFAULT '',
    thread_cursor text NOT NULL DEFAULT '',
    pages         integer NOT NULL DEFAULT 0,
    messages      integer NOT NULL DEFAULT 0,
    links         integer NOT NULL DEFAULT 0,
    files         integer NOT NULL DEFAULT 0,
    found         integer NOT NULL DEFAULT 0,
    progress_ts   text NOT NULL DEFAULT '',
    owner         text NOT NULL DEFAULT '',
    owned_until   timestamptz,
    problem       text NOT NULL DEFAULT '',
    created       timestamptz NOT NULL,
    updated       timestamptz NOT NULL
);
-- RunningBackfills.
CREATE INDEX backfills_running ON backfills (channel) WHERE state = 'running';
-- Prune: the finished ones by age.
CREATE INDEX backfills_finished ON backfills (updated) WHERE state <> 'running';

-- +goose Down
DROP TABLE backfills;
