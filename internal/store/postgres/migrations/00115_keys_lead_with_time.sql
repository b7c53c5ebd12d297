-- +goose Up
-- The keys every job writes lead with something that grows with time, not with the account:
-- a write then lands on the last page of each index instead of on a page per account. The
-- job's primary key becomes (id, account_id) (a job id is its product and its idempotency key,
-- and a key the service mints is in time order), the idempotency key's index (idem_key,
-- account_id), and the outbox event's key (id, account_id) (an event id is its job's id and
-- outcome). Every read names both columns, so each stays one exact lookup.
-- ledger_entries_account goes: its one reader is the audit of a balance against its entries,
-- which may read the table through; every other read of entries goes by key.
ALTER TABLE jobs DROP CONSTRAINT jobs_pkey, ADD CONSTRAINT jobs_pkey PRIMARY KEY (id, account_id);
DROP INDEX jobs_idem_key;
CREATE UNIQUE INDEX jobs_idem_key ON jobs(idem_key, account_id);
ALTER TABLE events DROP CONSTRAINT events_account_id_id_key, ADD CONSTRAINT events_id_account_key UNIQUE (id, account_id);
DROP INDEX ledger_entries_account;

-- +goose Down
ALTER TABLE jobs DROP CONSTRAINT jobs_pkey, ADD CONSTRAINT jobs_pkey PRIMARY KEY (account_id, id);
DROP INDEX jobs_idem_key;
CREATE UNIQUE INDEX jobs_idem_key ON jobs(account_id, idem_key);
ALTER TABLE events DROP CONSTRAINT events_id_account_key, ADD CONSTRAINT events_account_id_id_key UNIQUE (account_id, id);
CREATE INDEX ledger_entries_account ON ledger_entries(account_id, id);
