-- +goose Up
-- A ledger movement is one statement on SQLite, as on PostgreSQL: LedgerApply inserts the entry
-- with the balance it leaves (read and guarded from the account row by the INSERT itself), and
-- this trigger, part of the same statement, moves the account's balance to it and counts charges
-- and refunds in the usage rollup. The entry names its job's model, which the rollup is keyed by.
ALTER TABLE ledger_entries ADD COLUMN model TEXT NOT NULL DEFAULT '';
-- +goose StatementBegin
CREATE TRIGGER ledger_entries_apply AFTER INSERT ON ledger_entries
BEGIN
    UPDATE accounts SET balance = NEW.balance WHERE id = NEW.account_id;
    INSERT INTO usage_daily (account_id, day, key_id, model, charged, refunded, jobs)
    SELECT NEW.account_id, (NEW.created_at / 86400000000) * 86400000000, NEW.key_id, NEW.model,
           CASE WHEN NEW.kind = 'charge' THEN -NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'refund' THEN NEW.amount ELSE 0 END,
           CASE WHEN NEW.kind = 'charge' THEN 1 ELSE 0 END
    WHERE NEW.kind IN ('charge', 'refund')
    ON CONFLICT (account_id, day, key_id, model) DO UPDATE SET charged = charged + excluded.charged,
        refunded = refunded + excluded.refunded, jobs = jobs + excluded.jobs;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER ledger_entries_apply;
ALTER TABLE ledger_entries DROP COLUMN model;
