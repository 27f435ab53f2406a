-- Schema 15: the claims of verdict reports being sent
-- (store.State.ClaimReport): one row per report (task, option, category)
-- a replica is sending to the URL service, with who sends it and until
-- when the claim holds. Two clicks on two cards of one task, handled by
-- two replicas at once, both read the cards before either has written its
-- report there; the claim makes one of them send it.
--
-- ClaimReport inserts the row, or takes it over (ON CONFLICT DO UPDATE …
-- WHERE) only when its claim has lapsed or is the caller's: the row lock
-- orders concurrent claimants on any replica. ReleaseReport deletes the
-- caller's row; lapsed rows are swept now and then by ClaimReport.
--
-- The change is additive: replicas on schema 14 read and write no table
-- or column that changed (they keep their claims in memory, as before).

-- +goose Up
CREATE TABLE report_claims (
    key        text PRIMARY KEY,
    holder     text NOT NULL,
    held_until timestamptz NOT NULL
);
CREATE INDEX report_claims_until ON report_claims (held_until);

-- +goose Down
DROP TABLE report_claims;
