-- Schema 9: deferred checks. A URL not sent to the service because whoever
-- posted it had used their allowance (VERDICTBOT_USER_LINKS_PER_HOUR) is
-- checked later by the recheck: targets.deferred is when that check is due
-- (NULL: none pending), apart from next_check, the recheck schedule's; a
-- claim moves it ahead by its hold, as it does next_check. The change is
-- additive: replicas on schema 8 keep working (they defer nothing and take
-- no deferred check).

-- +goose Up
ALTER TABLE targets ADD COLUMN deferred timestamptz;
CREATE INDEX targets_deferred ON targets (deferred, target) WHERE deferred IS NOT NULL;

-- +goose Down
DROP INDEX targets_deferred;
ALTER TABLE targets DROP COLUMN deferred;
