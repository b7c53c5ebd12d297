-- +goose Up
-- The keys every job writes lead with something that grows with time, not with the account:
-- a write then lands on the last page of each index, which the jobs of one group commit share,
-- instead of on a page per account. The job's primary key becomes (id, account_id) (a job id
-- is its product and its idempotency key, and a key the service mints is in time order), the
-- idempotency key's index (idem_key, account_id), and the outbox event's key (id, account_id)
-- (an event id is its job's id and outcome). Every read names both columns, so each stays one
-- exact lookup. ledger_entries_account goes: its one reader is the audit of a balance against
-- its entries, which may read the table through; every other read of entries goes by key.
-- SQLite changes a primary key or a table's UNIQUE constraint by copying the table.
CREATE TABLE jobs_new (
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
    PRIMARY KEY (id, account_id)
);
INSERT INTO jobs_new SELECT * FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_waiting ON jobs(model, priority, created_at, request_id) WHERE status = 'IN_QUEUE';
CREATE INDEX jobs_overdue ON jobs(start_by) WHERE status = 'IN_QUEUE' AND start_by IS NOT NULL;
CREATE UNIQUE INDEX jobs_idem_key ON jobs(idem_key, account_id);
CREATE INDEX jobs_account_model ON jobs(account_id, model, created_at, id);
CREATE INDEX jobs_stale ON jobs(lease_until) WHERE status = 'IN_PROGRESS';
CREATE INDEX jobs_account_open ON jobs(account_id, created_at, id) WHERE status <> 'COMPLETED';
CREATE INDEX jobs_account_done ON jobs(account_id, outcome, created_at, id) WHERE status = 'COMPLETED';
CREATE TABLE events_new (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
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
    UNIQUE (id, account_id)
);
INSERT INTO events_new SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_pending ON events(seq) WHERE fanned_out = 0;
DROP INDEX ledger_entries_account;

-- +goose Down
CREATE TABLE jobs_new (
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
INSERT INTO jobs_new SELECT * FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_waiting ON jobs(model, priority, created_at, request_id) WHERE status = 'IN_QUEUE';
CREATE INDEX jobs_overdue ON jobs(start_by) WHERE status = 'IN_QUEUE' AND start_by IS NOT NULL;
CREATE UNIQUE INDEX jobs_idem_key ON jobs(account_id, idem_key);
CREATE INDEX jobs_account_model ON jobs(account_id, model, created_at, id);
CREATE INDEX jobs_stale ON jobs(lease_until) WHERE status = 'IN_PROGRESS';
CREATE INDEX jobs_account_open ON jobs(account_id, created_at, id) WHERE status <> 'COMPLETED';
CREATE INDEX jobs_account_done ON jobs(account_id, outcome, created_at, id) WHERE status = 'COMPLETED';
CREATE TABLE events_new (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
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
INSERT INTO events_new SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_pending ON events(seq) WHERE fanned_out = 0;
CREATE INDEX ledger_entries_account ON ledger_entries(account_id, id);
