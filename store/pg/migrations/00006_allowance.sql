-- Schema 6: what each requester sent to the services, for
-- VERDICTBOT_USER_LINKS_PER_HOUR (store.State.TakeAllowance): one row per
-- key, with the times of its uses within the window, oldest first. The
-- statement that takes a use locks the key's row (INSERT … ON CONFLICT DO
-- UPDATE), so the replicas' counts are one. The change is additive:
-- replicas on schema 5 keep working (without the shared cap).

-- +goose Up
CREATE TABLE allowance_uses (
    key  text PRIMARY KEY,
    uses timestamptz[] NOT NULL,
    last timestamptz NOT NULL
);
CREATE INDEX allowance_uses_last ON allowance_uses (last);

-- +goose Down
DROP TABLE allowance_uses;
