-- +goose Up
-- An account's job list without a state or model filter reads every state's index and merges
-- them (the unsettled jobs, jobs_account_open, and the settled ones by outcome,
-- jobs_account_done): the index of every job of an account, newest first, is no longer kept.
-- It cost every submit a page write of its own.
DROP INDEX jobs_account_recent;

-- +goose Down
CREATE INDEX jobs_account_recent ON jobs(account_id, created_at, id);
