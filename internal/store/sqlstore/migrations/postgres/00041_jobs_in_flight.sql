-- +goose Up
-- Every submit counts the account's jobs in flight (the plan's in-flight limit). Without an
-- index that count reads every job the account ever ran; a partial index over the unsettled
-- ones keeps it as small as what is in flight.
CREATE INDEX jobs_account_in_flight ON jobs (account_id) WHERE status <> 'COMPLETED';

-- +goose Down
DROP INDEX jobs_account_in_flight;
