-- +goose Up
-- Two rollups beside usage_daily, written by the same trigger in the same statement, so a usage
-- read costs a few hundred rows at most however busy the account: usage_monthly (one row per
-- account, UTC calendar month, key and model) serves the per-key and per-model sums of whole
-- months, and usage_daily_totals (one row per account and UTC day, every key and model summed)
-- the per-day chart. usage_daily stays the export's rows and the part-month edges of a window.
CREATE TABLE usage_monthly (
    account_id TEXT NOT NULL,
    month      BIGINT NOT NULL, -- start of the UTC calendar month, microseconds since the epoch
    key_id     TEXT NOT NULL,
    model      TEXT NOT NULL,
    charged    BIGINT NOT NULL DEFAULT 0,
    refunded   BIGINT NOT NULL DEFAULT 0,
    jobs       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, month, key_id, model)
) WITHOUT ROWID;
CREATE TABLE usage_daily_totals (
    account_id TEXT NOT NULL,
    day        BIGINT NOT NULL, -- start of the UTC day, microseconds since the epoch
    charged    BIGINT NOT NULL DEFAULT 0,
    refunded   BIGINT NOT NULL DEFAULT 0,
    jobs       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day)
) WITHOUT ROWID;
INSERT INTO usage_monthly (account_id, month, key_id, model, charged, refunded, jobs)
SELECT account_id, CAST(strftime('%s', day / 1000000, 'unixepoch', 'start of month') AS INTEGER) * 1000000, key_id, model,
       SUM(charged), SUM(refunded), SUM(jobs)
FROM usage_daily
GROUP BY account_id, CAST(strftime('%s', day / 1000000, 'unixepoch', 'start of month') AS INTEGER) * 1000000, key_id, model;
INSERT INTO usage_daily_totals (account_id, day, charged, refunded, jobs)
SELECT account_id, day, SUM(charged), SUM(refunded), SUM(jobs) FROM usage_daily GROUP BY account_id, day;

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
END;
-- +goose StatementEnd
DROP TABLE usage_daily_totals;
DROP TABLE usage_monthly;
