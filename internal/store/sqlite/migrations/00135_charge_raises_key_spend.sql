-- +goose Up
-- A charge raises its key's spend in the statement that writes it: the trigger that moves the
-- balance and the rollups with each entry also adds a charge to its key's spend for the
-- entry's period, starting the period afresh when the key's spend was of an earlier one.
-- (A refund gives back to the spend of the period its job started in, which the entry does
-- not carry: the ledger lowers the key's spend for it with a statement of its own.)
DROP TRIGGER ledger_entries_apply;
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
DROP TRIGGER ledger_entries_apply;
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
