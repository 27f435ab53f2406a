-- Schema 5: the durable queue of outgoing events (VERDICTBOT_EVENTS_URL,
-- package events). event_seq holds the last sequence number given; the
-- UPDATE that takes the next one locks its row until the transaction
-- commits, so sequence numbers are given in commit order, without gaps,
-- and the sender (one replica at a time, under an advisory lock) sees the
-- events in order. The change is additive: replicas on schema 3 keep working.

-- +goose Up
CREATE TABLE event_seq (
    id   int PRIMARY KEY CHECK (id = 1),
    last bigint NOT NULL
);
INSERT INTO event_seq (id, last) VALUES (1, 0);
CREATE TABLE event_queue (
    seq  bigint PRIMARY KEY,
    body bytea NOT NULL
);

-- +goose Down
DROP TABLE event_queue;
DROP TABLE event_seq;
