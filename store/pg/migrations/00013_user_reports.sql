-- Schema 13: the messages reported to the security team
-- (store.State.AddUserReport, issue 25): one row per message in
-- user_reports, one per user who reported it in user_report_reporters.
--
-- The report is columns, not a jsonb record: it is flat, and what it is
-- found and pruned by (its triage card, its last update) are columns with
-- an index. A replica that does not know a column added later leaves that
-- column as it is when it updates the others, where a jsonb record it
-- rewrote would lose the keys it does not know (as a card's "team" does,
-- see 00012).
--
-- The reporters are rows, not a jsonb array: AddUserReport adds one with
-- an INSERT while it holds the report's row lock (SELECT … FOR UPDATE), so
-- concurrent reporters, on any replica, each add their row once (the
-- primary key (channel, ts, user_id) holds that too) and none rewrites
-- another's; seq, an identity column, is their order of arrival. The
-- lookups by user (UserReportsBy, and UserReportsSince, the per-user rate
-- limit) are a range scan of the index on (user_id, at), where a jsonb
-- array would need a GIN index and an unnest to compare the times.
--
-- The change is additive: replicas on schema 12 read and write no table
-- or column that changed.

-- +goose Up
CREATE TABLE user_reports (
    channel        text NOT NULL,
    ts             text NOT NULL,
    thread_ts      text NOT NULL DEFAULT '',
    author         text NOT NULL DEFAULT '',
    author_team    text NOT NULL DEFAULT '',
    triage_channel text NOT NULL DEFAULT '',
    triage_ts      text NOT NULL DEFAULT '',
    assignee       text NOT NULL DEFAULT '',
    outcome        text NOT NULL DEFAULT '',
    decided_by     text NOT NULL DEFAULT '',
    decided_at     timestamptz,
    created        timestamptz NOT NULL,
    updated        timestamptz NOT NULL,
    PRIMARY KEY (channel, ts)
);
-- UserReportByTriage; a triage card is one report's (store.ErrTriageTaken).
CREATE UNIQUE INDEX user_reports_triage ON user_reports (triage_channel, triage_ts)
    WHERE triage_channel <> '' AND triage_ts <> '';
-- Prune.
CREATE INDEX user_reports_updated ON user_reports (updated);

CREATE TABLE user_report_reporters (
    channel text NOT NULL,
    ts      text NOT NULL,
    user_id text NOT NULL,
    at      timestamptz NOT NULL,
    via     text NOT NULL DEFAULT '',
    told    boolean NOT NULL DEFAULT false,
    seq     bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (channel, ts, user_id),
    FOREIGN KEY (channel, ts) REFERENCES user_reports (channel, ts) ON DELETE CASCADE
);
CREATE INDEX user_report_reporters_user ON user_report_reporters (user_id, at);

-- +goose Down
DROP TABLE user_report_reporters;
DROP TABLE user_reports;
