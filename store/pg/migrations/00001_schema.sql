-- verdictbot state on PostgreSQL, schema 1. The same domain records as the
-- embedded file (package store), one table each; the card record is a
-- document (JSONB, the card model as the file stores it since its schema 2).
-- Text keys that are listed in order (card ts, domains, targets) compare
-- with COLLATE "C", bytewise, as the file's keys do.

-- +goose Up
CREATE TABLE events (
    event_id text PRIMARY KEY,
    seen_at  timestamptz NOT NULL
);
CREATE INDEX events_seen_at ON events (seen_at);

CREATE TABLE jobs (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind     text NOT NULL,
    event_id text NOT NULL DEFAULT '',
    payload  bytea,
    received timestamptz NOT NULL
);

CREATE TABLE cards (
    channel      text COLLATE "C" NOT NULL,
    source_ts    text COLLATE "C" NOT NULL,
    card_ts      text NOT NULL DEFAULT '',
    unfinished   boolean NOT NULL,
    record       jsonb NOT NULL,
    updated      timestamptz NOT NULL,
    PRIMARY KEY (channel, source_ts)
);
CREATE INDEX cards_card_ts ON cards (channel, card_ts) WHERE card_ts <> '';
CREATE INDEX cards_unfinished ON cards (channel, source_ts) WHERE unfinished;

CREATE TABLE analyses (
    service      text COLLATE "C" NOT NULL,
    target       text COLLATE "C" NOT NULL,
    task_id      text NOT NULL,
    submitted_at timestamptz NOT NULL,
    PRIMARY KEY (service, target)
);

CREATE TABLE targets (
    target     text COLLATE "C" PRIMARY KEY,
    kind       text NOT NULL,
    first_seen timestamptz NOT NULL,
    checked    timestamptz NOT NULL,
    level      integer NOT NULL,
    category   text NOT NULL DEFAULT '',
    task_id    text NOT NULL DEFAULT '',
    rechecks   integer NOT NULL DEFAULT 0,
    next_check timestamptz
);
CREATE INDEX targets_due ON targets (next_check, target) WHERE next_check IS NOT NULL;

-- The cards that show a target, in the order it first appeared on them.
CREATE TABLE target_cards (
    target    text COLLATE "C" NOT NULL REFERENCES targets ON DELETE CASCADE,
    channel   text COLLATE "C" NOT NULL,
    source_ts text COLLATE "C" NOT NULL,
    pos       bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (target, channel, source_ts)
);

CREATE TABLE verdicts (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    target    text NOT NULL,
    kind      text NOT NULL,
    task_id   text NOT NULL DEFAULT '',
    level     integer NOT NULL,
    category  text NOT NULL DEFAULT '',
    scores    jsonb,
    malscore  double precision NOT NULL DEFAULT 0,
    family    text NOT NULL DEFAULT '',
    at        timestamptz NOT NULL,
    source    text NOT NULL DEFAULT ''
);
CREATE INDEX verdicts_target ON verdicts (target, at, id);

CREATE TABLE reports (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    target         text NOT NULL,
    task_id        text NOT NULL DEFAULT '',
    user_id        text NOT NULL DEFAULT '',
    option         text NOT NULL DEFAULT '',
    category       text NOT NULL DEFAULT '',
    at             timestamptz NOT NULL,
    outcome        text NOT NULL DEFAULT '',
    card_channel   text NOT NULL DEFAULT '',
    card_source_ts text NOT NULL DEFAULT ''
);
CREATE INDEX reports_target ON reports (target, at, id);

-- Channel settings: the mode and the file-scanning switch ('' = not set).
CREATE TABLE channels (
    channel text PRIMARY KEY,
    mode    text NOT NULL DEFAULT '',
    files   text NOT NULL DEFAULT ''
);

CREATE TABLE allowlist (
    domain   text COLLATE "C" PRIMARY KEY,
    added_by text NOT NULL,
    added_at timestamptz NOT NULL
);

-- Task id → target, for /scan history <task_id> and /scan report.
CREATE TABLE tasks (
    task_id text PRIMARY KEY,
    target  text NOT NULL
);

-- +goose Down
DROP TABLE tasks, allowlist, channels, reports, verdicts, target_cards, targets, analyses, cards, jobs, events;
