-- +goose Up
-- An idempotency key is scoped to the account: it answers the first request whatever product
-- or body comes later. Jobs written before this rule that share a key across products keep
-- their ids; all but the first of them get a key no client can send (outside the key
-- alphabet), so the key is unique.
UPDATE jobs SET idem_key = 'dup~' || request_id
WHERE EXISTS (SELECT 1 FROM jobs earlier WHERE earlier.account_id = jobs.account_id AND earlier.idem_key = jobs.idem_key
              AND (earlier.created_at < jobs.created_at OR (earlier.created_at = jobs.created_at AND earlier.id < jobs.id)));
CREATE UNIQUE INDEX jobs_idem_key ON jobs(account_id, idem_key);

-- +goose Down
DROP INDEX jobs_idem_key;
