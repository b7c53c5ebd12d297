-- +goose Up
CREATE TABLE accounts (
    id                TEXT PRIMARY KEY,
    plan              TEXT NOT NULL,
    status            TEXT NOT NULL DEFAULT 'live',
    balance           BIGINT NOT NULL DEFAULT 0,
    monthly_allowance BIGINT NOT NULL DEFAULT 0,
    created_at        BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts(id),
    secret_hash     TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    revoked_at      BIGINT,
    ceiling_mode    TEXT NOT NULL DEFAULT 'plan',
    ceiling         BIGINT NOT NULL DEFAULT 0,
    support_ceiling BIGINT NOT NULL DEFAULT 0,
    spent_period    TEXT NOT NULL DEFAULT '',
    spent           BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_account ON api_keys(account_id);

-- Every movement of credits; accounts.balance always equals the sum of amount per account.
CREATE TABLE ledger_entries (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_id     TEXT NOT NULL DEFAULT '',
    job_id     TEXT NOT NULL DEFAULT '',
    kind       TEXT NOT NULL,
    amount     BIGINT NOT NULL,
    balance    BIGINT NOT NULL,
    period     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries(account_id, id);
CREATE INDEX ledger_entries_key ON ledger_entries(key_id, created_at);

-- +goose Down
DROP TABLE ledger_entries;
DROP TABLE api_keys;
DROP TABLE accounts;
