-- Schema 4: quarantine. quarantined keeps each message quarantine removed
-- (store.Quarantined as JSON) until VERDICTBOT_QUARANTINE_RETENTION after
-- its removal; channels gains each channel's quarantine level. The change
-- is additive: replicas still on schema 3 keep working.

-- +goose Up
CREATE TABLE quarantined (
    channel text NOT NULL,
    ts      text NOT NULL,
    removed timestamptz NOT NULL,
    record  jsonb NOT NULL,
    PRIMARY KEY (channel, ts)
);
CREATE INDEX quarantined_removed ON quarantined (removed);
ALTER TABLE channels ADD COLUMN quarantine text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE channels DROP COLUMN quarantine;
DROP TABLE quarantined;
