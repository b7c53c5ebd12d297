-- +goose Up
-- Flat cost per job: what a submit, a settlement or a usage read costs must not grow with the
-- account's history.

-- An account's unsettled jobs: counting them reads only them, not every job it ever had.
CREATE INDEX jobs_in_flight ON jobs(account_id) WHERE status <> 'COMPLETED';
-- Waiting jobs of a model (claims, queue length, queue position, overdue) read only the queue.
CREATE INDEX jobs_waiting ON jobs(model, priority, created_at, request_id) WHERE status = 'IN_QUEUE';
CREATE INDEX jobs_overdue ON jobs(start_by) WHERE status = 'IN_QUEUE' AND start_by IS NOT NULL;

-- How many passes or promotions the account was ever given: a submit reads the passes only
-- when there are some.
ALTER TABLE accounts ADD COLUMN pass_count INTEGER NOT NULL DEFAULT 0;
UPDATE accounts SET pass_count = (SELECT count(*) FROM passes WHERE passes.account_id = accounts.id);

-- The usage rollup: one row per account, UTC day, key and model, written in the transaction
-- of the ledger entry it counts, so GET /v1/usage reads at most a window's days.
CREATE TABLE usage_daily (
    account_id TEXT NOT NULL,
    day        BIGINT NOT NULL, -- start of the UTC day, microseconds since the epoch
    key_id     TEXT NOT NULL,
    model      TEXT NOT NULL,
    charged    BIGINT NOT NULL DEFAULT 0,
    refunded   BIGINT NOT NULL DEFAULT 0,
    jobs       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day, key_id, model)
) WITHOUT ROWID; -- rows stored in key order: a window is one contiguous range
INSERT INTO usage_daily (account_id, day, key_id, model, charged, refunded, jobs)
SELECT e.account_id, (e.created_at / 86400000000) * 86400000000, e.key_id, COALESCE(j.model, ''),
       SUM(CASE WHEN e.kind = 'charge' THEN -e.amount ELSE 0 END),
       SUM(CASE WHEN e.kind = 'refund' THEN e.amount ELSE 0 END),
       SUM(CASE WHEN e.kind = 'charge' THEN 1 ELSE 0 END)
FROM ledger_entries e LEFT JOIN jobs j ON j.account_id = e.account_id AND j.id = e.job_id
WHERE e.kind IN ('charge', 'refund')
GROUP BY e.account_id, (e.created_at / 86400000000) * 86400000000, e.key_id, COALESCE(j.model, '');

-- +goose Down
DROP TABLE usage_daily;
ALTER TABLE accounts DROP COLUMN pass_count;
DROP INDEX jobs_overdue;
DROP INDEX jobs_waiting;
DROP INDEX jobs_in_flight;
