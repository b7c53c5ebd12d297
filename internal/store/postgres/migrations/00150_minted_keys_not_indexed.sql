-- +goose Up
-- A key the service mints for a submit sent without one is "k" and the job's request id: the
-- row keeps it as '' and the store gives it back from the request id (a read by such a key
-- looks the request id up). The unique index of keys then holds only the keys callers chose,
-- and a job sent without a key writes one index entry fewer. Keys minted before this release
-- (a "k" and an id of their own) stay in the rows, and in the index, as they are.
DROP INDEX jobs_idem_key;
CREATE UNIQUE INDEX jobs_idem_key ON jobs(idem_key, account_id) WHERE idem_key <> '';

-- +goose Down
UPDATE jobs SET idem_key = 'k' || request_id WHERE idem_key = '';
DROP INDEX jobs_idem_key;
CREATE UNIQUE INDEX jobs_idem_key ON jobs(idem_key, account_id);
