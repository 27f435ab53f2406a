-- Schema 10: the analysis durations the learned polling schedules learn
-- from (store.State.RecordDuration): one row per service with its latest
-- durations in nanoseconds, oldest first, bounded by the writer's keep.
-- The statement that appends one locks the row (INSERT … ON CONFLICT DO
-- UPDATE), so the replicas share one list. The change is additive:
-- replicas on schema 9 keep working (they learn on their own).

-- +goose Up
CREATE TABLE learned_durations (
    service   text PRIMARY KEY,
    durations bigint[] NOT NULL
);

-- +goose Down
DROP TABLE learned_durations;
