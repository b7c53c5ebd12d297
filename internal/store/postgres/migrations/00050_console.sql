-- +goose Up
-- Users of the web console and their sessions. An account's user has account_id set; an
-- operator has an empty account_id. A session keeps the HMAC of its token's secret, like a key.
CREATE TABLE console_users (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL DEFAULT '',
    email         TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    operator      INTEGER NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX console_users_email ON console_users (email);
CREATE INDEX console_users_account ON console_users (account_id);

CREATE TABLE console_sessions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
CREATE INDEX console_sessions_user ON console_sessions (user_id);

-- +goose Down
DROP TABLE console_sessions;
DROP TABLE console_users;
