-- Schema 16: the final cards Slack refused for longer than the card's own
-- retries (store.State.StaleCards): cards.Messages.RunStale shows each
-- again once Slack answers, for up to a day from since. Kept in the
-- database so that a restart during a long Slack outage, or another
-- replica, goes on with them; a card removed takes its row with it.
--
-- The change is additive: replicas on schema 15 read and write no table
-- or column that changed (they keep their stale cards in memory, as
-- before).

-- +goose Up
CREATE TABLE stale_cards (
    channel   text COLLATE "C" NOT NULL,
    source_ts text COLLATE "C" NOT NULL,
    since     timestamptz NOT NULL,
    PRIMARY KEY (channel, source_ts),
    FOREIGN KEY (channel, source_ts) REFERENCES cards (channel, source_ts) ON DELETE CASCADE
);
CREATE INDEX stale_cards_since ON stale_cards (since);

-- +goose Down
DROP TABLE stale_cards;
