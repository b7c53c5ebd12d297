-- +goose Up
-- Each account's console key: the key record the console's playground runs are charged under
-- (auth.ConsoleKey), so the ledger keeps its spend as any key's and usage by key and the
-- per-charge export count those runs. Until now they carried the key id 'console', which had
-- no record. The key's id is 'console_' and the account id, which no minted id can be (a
-- public id is 12 base62 characters); its secret hash is not a hash, so nothing signs with
-- it; it holds every current scope, no ceiling of its own, and never expires. console marks
-- it: the owner cannot revoke it, and it holds no live-key slot. The index keeps one per
-- account.
ALTER TABLE api_keys ADD COLUMN console INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX api_keys_console ON api_keys(account_id) WHERE console = 1;

-- Every account gets its key now; an account created later gets it on its first need. Its
-- spend this month is what the console spent this month.
INSERT INTO api_keys (id, account_id, secret_hash, scopes, created_at, expires_at, revoked_at, ceiling_mode, ceiling,
                      support_ceiling, spent_period, spent, console)
SELECT 'console_' || a.id, a.id, 'none',
       'jobs:read,assets:read,image:write,video:write,audio:write,3d:write,text:write,embeddings:write,webhooks:write,chat:read,community:write,studio:read,studio:write',
       a.created_at, 253402214400000000, NULL, 'none', 0, 0, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM'),
       COALESCE((SELECT SUM(m.charged - m.refunded) FROM usage_monthly m WHERE m.account_id = a.id AND m.key_id = 'console'
                 AND m.month = CAST(EXTRACT(EPOCH FROM date_trunc('month', now() AT TIME ZONE 'UTC')) AS BIGINT) * 1000000), 0), 1
FROM accounts a;

-- What was recorded under 'console' moves to each account's console key: the charges and
-- refunds (the per-charge export reads them by key), the jobs (a job's settlement gives its
-- refund back to its key), and the usage rollups.
UPDATE ledger_entries SET key_id = 'console_' || account_id WHERE key_id = 'console';
UPDATE jobs SET key_id = 'console_' || account_id WHERE key_id = 'console';
UPDATE usage_daily SET key_id = 'console_' || account_id WHERE key_id = 'console';
UPDATE usage_monthly SET key_id = 'console_' || account_id WHERE key_id = 'console';

-- +goose Down
UPDATE usage_monthly SET key_id = 'console' WHERE key_id = 'console_' || account_id;
UPDATE usage_daily SET key_id = 'console' WHERE key_id = 'console_' || account_id;
UPDATE jobs SET key_id = 'console' WHERE key_id = 'console_' || account_id;
UPDATE ledger_entries SET key_id = 'console' WHERE key_id = 'console_' || account_id;
DELETE FROM api_keys WHERE console = 1;
DROP INDEX api_keys_console;
ALTER TABLE api_keys DROP COLUMN console;
