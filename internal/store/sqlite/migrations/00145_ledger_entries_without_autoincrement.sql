-- +goose Up
-- Ledger entries lose AUTOINCREMENT: no entry is ever deleted, so a new id (the largest plus
-- one) is never one given before, and the COMMIT that writes a charge no longer writes
-- sqlite_sequence's page too. SQLite changes a column's AUTOINCREMENT by copying the table;
-- the copy takes its index and its trigger (as migration 00135 wrote it) again.
CREATE TABLE ledger_entries_new (
    id         INTEGER PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_id     TEXT NOT NULL DEFAULT '',
    job_id     TEXT NOT NULL DEFAULT '',
    kind       TEXT NOT NULL,
    amount     BIGINT NOT NULL,
    balance    BIGINT NOT NULL,
    period     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    model      TEXT NOT NULL DEFAULT ''
);
INSERT INTO ledger_entries_new (id, account_id, key_id, job_id, kind, amount, balance, period, created_at, model)
SELECT id, account_id, key_id, job_id, kind, amount, balance, period, created_at, model FROM ledger_entries;
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_new RENAME TO ledger_entries;
CREATE INDEX ledger_entries_key ON ledger_entries(key_id, created_at);
-- +goose StatementBegin
CREATE TRIGGER ledger_entries_apply AFTER INSERT ON ledger_entries
BEGIN
    UPDATE accounts SET balance = NEW.balance WHERE id = NEW.account_id;
    UPDATE api_keys SET spent = CASE WHEN spent_period = NEW.period THEN spent - NEW.amount ELSE -NEW.amount END,
        spent_period = NEW.period
    WHERE id = NEW.key_id AND NEW.kind = 'charge';
    INSERT INTO usage_daily (account_id, day, key_id, model, charged, refunded, jobs)
    SELECT NEW.account_id, (NEW.created_at / 86400000000) * 86400000000, NEW.key_id, NEW.model,
           CASE WHEN NEW.kind = 'charge' THEN -NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'refund' THEN NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'charge' THEN 1 ELSE 0 END
    WHERE NEW.kind IN ('charge', 'refund')
    ON CONFLICT (account_id, day, key_id, model) DO UPDATE SET charged = charged + excluded.charged,
        refunded = refunded + excluded.refunded, jobs = jobs + excluded.jobs;
    INSERT INTO usage_monthly (account_id, month, key_id, model, charged, refunded, jobs)
    SELECT NEW.account_id, CAST(strftime('%s', NEW.created_at / 1000000, 'unixepoch', 'start of month') AS INTEGER) * 1000000,
           NEW.key_id, NEW.model,
           CASE WHEN NEW.kind = 'charge' THEN -NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'refund' THEN NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'charge' THEN 1 ELSE 0 END
    WHERE NEW.kind IN ('charge', 'refund')
    ON CONFLICT (account_id, month, key_id, model) DO UPDATE SET charged = charged + excluded.charged,
        refunded = refunded + excluded.refunded, jobs = jobs + excluded.jobs;
    INSERT INTO usage_daily_totals (account_id, day, charged, refunded, jobs)
    SELECT NEW.account_id, (NEW.created_at / 86400000000) * 86400000000,
           CASE WHEN NEW.kind = 'charge' THEN -NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'refund' THEN NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'charge' THEN 1 ELSE 0 END
    WHERE NEW.kind IN ('charge', 'refund')
    ON CONFLICT (account_id, day) DO UPDATE SET charged = charged + excluded.charged,
        refunded = refunded + excluded.refunded, jobs = jobs + excluded.jobs;
END;
-- +goose StatementEnd

-- +goose Down
CREATE TABLE ledger_entries_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_id     TEXT NOT NULL DEFAULT '',
    job_id     TEXT NOT NULL DEFAULT '',
    kind       TEXT NOT NULL,
    amount     BIGINT NOT NULL,
    balance    BIGINT NOT NULL,
    period     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    model      TEXT NOT NULL DEFAULT ''
);
INSERT INTO ledger_entries_new (id, account_id, key_id, job_id, kind, amount, balance, period, created_at, model)
SELECT id, account_id, key_id, job_id, kind, amount, balance, period, created_at, model FROM ledger_entries;
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_new RENAME TO ledger_entries;
CREATE INDEX ledger_entries_key ON ledger_entries(key_id, created_at);
-- +goose StatementBegin
CREATE TRIGGER ledger_entries_apply AFTER INSERT ON ledger_entries
BEGIN
    UPDATE accounts SET balance = NEW.balance WHERE id = NEW.account_id;
    UPDATE api_keys SET spent = CASE WHEN spent_period = NEW.period THEN spent - NEW.amount ELSE -NEW.amount END,
        spent_period = NEW.period
    WHERE id = NEW.key_id AND NEW.kind = 'charge';
    INSERT INTO usage_daily (account_id, day, key_id, model, charged, refunded, jobs)
    SELECT NEW.account_id, (NEW.created_at / 86400000000) * 86400000000, NEW.key_id, NEW.model,
           CASE WHEN NEW.kind = 'charge' THEN -NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'refund' THEN NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'charge' THEN 1 ELSE 0 END
    WHERE NEW.kind IN ('charge', 'refund')
    ON CONFLICT (account_id, day, key_id, model) DO UPDATE SET charged = charged + excluded.charged,
        refunded = refunded + excluded.refunded, jobs = jobs + excluded.jobs;
    INSERT INTO usage_monthly (account_id, month, key_id, model, charged, refunded, jobs)
    SELECT NEW.account_id, CAST(strftime('%s', NEW.created_at / 1000000, 'unixepoch', 'start of month') AS INTEGER) * 1000000,
           NEW.key_id, NEW.model,
           CASE WHEN NEW.kind = 'charge' THEN -NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'refund' THEN NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'charge' THEN 1 ELSE 0 END
    WHERE NEW.kind IN ('charge', 'refund')
    ON CONFLICT (account_id, month, key_id, model) DO UPDATE SET charged = charged + excluded.charged,
        refunded = refunded + excluded.refunded, jobs = jobs + excluded.jobs;
    INSERT INTO usage_daily_totals (account_id, day, charged, refunded, jobs)
    SELECT NEW.account_id, (NEW.created_at / 86400000000) * 86400000000,
           CASE WHEN NEW.kind = 'charge' THEN -NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'refund' THEN NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'charge' THEN 1 ELSE 0 END
    WHERE NEW.kind IN ('charge', 'refund')
    ON CONFLICT (account_id, day) DO UPDATE SET charged = charged + excluded.charged,
        refunded = refunded + excluded.refunded, jobs = jobs + excluded.jobs;
END;
-- +goose StatementEnd
