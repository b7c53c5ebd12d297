-- +goose Up
-- An account's jobs newest first, read a page at a time in (created_at, id) order straight from
-- an index: all of them, those of one model, or those in one state (status and outcome
-- together). The first replaces jobs_account_created, which lacked the id that breaks ties.
CREATE INDEX jobs_account_recent ON jobs(account_id, created_at, id);
DROP INDEX jobs_account_created;
CREATE INDEX jobs_account_model ON jobs(account_id, model, created_at, id);
CREATE INDEX jobs_account_state ON jobs(account_id, outcome, status, created_at, id);

-- +goose Down
DROP INDEX jobs_account_state;
DROP INDEX jobs_account_model;
CREATE INDEX jobs_account_created ON jobs(account_id, created_at);
DROP INDEX jobs_account_recent;
