-- +goose Up
-- An idempotency key is scoped to the account: it answers the first request whatever product
-- or body comes later. Jobs written before this rule that share a key across products keep
-- their ids; all but the first of them are re-keyed to their own job id so the key is unique.
UPDATE jobs SET idem_key = id
WHERE EXISTS (SELECT 1 FROM jobs first WHERE first.account_id = jobs.account_id AND first.idem_key = jobs.idem_key
              AND (first.created_at < jobs.created_at OR (first.created_at = jobs.created_at AND first.id < jobs.id)));
CREATE UNIQUE INDEX jobs_idem_key ON jobs(account_id, idem_key);

-- +goose Down
DROP INDEX jobs_idem_key;
