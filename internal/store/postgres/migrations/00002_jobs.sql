-- +goose Up
CREATE TABLE jobs (
    account_id      TEXT NOT NULL REFERENCES accounts(id),
    id              TEXT NOT NULL,
    key_id          TEXT NOT NULL,
    request_id      TEXT NOT NULL UNIQUE,
    model           TEXT NOT NULL,
    product         TEXT NOT NULL,
    idem_key        TEXT NOT NULL,
    input           TEXT NOT NULL,
    status          TEXT NOT NULL,
    outcome         TEXT NOT NULL DEFAULT '',
    error_code      TEXT NOT NULL DEFAULT '',
    error_detail    TEXT NOT NULL DEFAULT '',
    error_message   TEXT NOT NULL DEFAULT '',
    quoted          BIGINT NOT NULL,
    reserved        BIGINT NOT NULL DEFAULT 0,
    charged         BIGINT NOT NULL DEFAULT 0,
    coverage        TEXT NOT NULL DEFAULT '',
    priority        TEXT NOT NULL DEFAULT 'normal',
    start_by        BIGINT,
    webhook         TEXT NOT NULL DEFAULT '',
    provider_job_id TEXT NOT NULL DEFAULT '',
    dispatched      INTEGER NOT NULL DEFAULT 1,
    cancel_asked    INTEGER NOT NULL DEFAULT 0,
    result          TEXT NOT NULL DEFAULT '',
    logs            TEXT NOT NULL DEFAULT '',
    metrics         TEXT NOT NULL DEFAULT '',
    progress        DOUBLE PRECISION NOT NULL DEFAULT 0,
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     BIGINT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    started_at      BIGINT,
    finished_at     BIGINT,
    PRIMARY KEY (account_id, id)
);
CREATE INDEX jobs_account_created ON jobs(account_id, created_at);
CREATE INDEX jobs_queue ON jobs(model, status, priority, created_at);
CREATE INDEX jobs_lease ON jobs(status, lease_until);

-- The events outbox: one row per settled job per outcome, written in the settling transaction.
CREATE TABLE events (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    request_id TEXT NOT NULL,
    type       TEXT NOT NULL,
    product    TEXT NOT NULL,
    status     TEXT NOT NULL,
    error_code TEXT NOT NULL DEFAULT '',
    charged    BIGINT NOT NULL,
    reserved   BIGINT NOT NULL,
    webhook    TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    fanned_out INTEGER NOT NULL DEFAULT 0,
    UNIQUE (account_id, id)
);
CREATE INDEX events_pending ON events(fanned_out, seq);

CREATE TABLE passes (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    name        TEXT NOT NULL,
    promotion   INTEGER NOT NULL DEFAULT 0,
    models      TEXT NOT NULL DEFAULT '',
    max_credits BIGINT NOT NULL DEFAULT 0,
    uses_left   BIGINT NOT NULL DEFAULT -1,
    expires_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX passes_account ON passes(account_id);

-- +goose Down
DROP TABLE passes;
DROP TABLE events;
DROP TABLE jobs;
