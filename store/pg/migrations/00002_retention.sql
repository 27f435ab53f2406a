-- Schema 2: indexes for the retention prune (DB.Prune), which deletes by
-- age in bounded batches: final cards by their last update, verdicts and
-- reports by their time, and the target_cards rows of a pruned card.

-- +goose Up
CREATE INDEX cards_final_updated ON cards (updated) WHERE NOT unfinished;
CREATE INDEX verdicts_at ON verdicts (at);
CREATE INDEX reports_at ON reports (at);
CREATE INDEX target_cards_card ON target_cards (channel, source_ts);
CREATE INDEX targets_checked ON targets (checked) WHERE next_check IS NULL;

-- +goose Down
DROP INDEX targets_checked, target_cards_card, reports_at, verdicts_at, cards_final_updated;
