-- Schema 8: fenced leadership and the events' dead letters.
--
-- leaders holds one row per periodic job (events, recheck, retention): the
-- current term of its lead. A term is taken only when the previous one has
-- expired (or was released), and each new term increments token, the
-- fencing token; the holder renews expires on a session of its own (pid)
-- every lease/5. The writes that follow a leader's actions (an event leaves
-- the queue, a URL is claimed for its recheck) check in their transaction
-- that their term is still the live one (FOR SHARE on its row), so a
-- replica that lost the lead without noticing writes nothing.
--
-- event_dead keeps the events the receiver refused 20 times in a row, out
-- of the queue's way, until `verdictbot events retry` queues them again.
--
-- Replicas on schemas up to 7 lead with session advisory locks and do not see
-- these rows: during a rolling upgrade from it, an old and a new replica
-- may both lead a job until the last old one stops (docs/operations.md).

-- +goose Up
CREATE TABLE leaders (
    job     text PRIMARY KEY,
    holder  text NOT NULL,
    token   bigint NOT NULL,
    pid     int NOT NULL,
    elected timestamptz NOT NULL,
    expires timestamptz NOT NULL
);
CREATE TABLE event_dead (
    seq      bigint PRIMARY KEY,
    body     bytea NOT NULL,
    failures int NOT NULL,
    status   int NOT NULL,
    error    text NOT NULL,
    dead_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE event_dead;
DROP TABLE leaders;
