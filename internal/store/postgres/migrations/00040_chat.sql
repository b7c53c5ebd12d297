-- +goose Up
-- Chat conversations and their messages. A turn writes a user message and an assistant
-- message in one transaction; the assistant message names the turn's job and is filled when
-- the job settles. The idempotency key of a turn is unique per account.
CREATE TABLE chat_conversations (
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    title      TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, id)
);
CREATE INDEX chat_conversations_recent ON chat_conversations (account_id, updated_at DESC);

CREATE TABLE chat_messages (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    account_id      TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL DEFAULT '',
    model           TEXT NOT NULL DEFAULT '',
    job_id          TEXT NOT NULL DEFAULT '',
    idem_key        TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    created_at      BIGINT NOT NULL
);
CREATE INDEX chat_messages_thread ON chat_messages (conversation_id, seq);
CREATE UNIQUE INDEX chat_messages_key ON chat_messages (account_id, idem_key) WHERE role = 'assistant' AND idem_key <> '';

-- +goose Down
DROP TABLE chat_messages;
DROP TABLE chat_conversations;
