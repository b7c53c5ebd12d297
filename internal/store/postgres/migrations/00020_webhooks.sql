-- +goose Up
-- Registered webhook endpoints (spec 01 "Webhook endpoint record"). products is a JSON array,
-- '' meaning every product; verification is the JSON of the last failed challenge, '' when none.
CREATE TABLE webhook_endpoints (
    id                   TEXT PRIMARY KEY,
    account_id           TEXT NOT NULL,
    url                  TEXT NOT NULL,
    products             TEXT NOT NULL DEFAULT '',
    status               TEXT NOT NULL,
    created_at           BIGINT NOT NULL,
    verified             INTEGER NOT NULL DEFAULT 0,
    verified_at          BIGINT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_success_at      BIGINT,
    last_failure_at      BIGINT,
    last_status_code     INTEGER,
    disabled_reason      TEXT NOT NULL DEFAULT '',
    verification         TEXT NOT NULL DEFAULT '',
    dead_at              BIGINT
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints(account_id, created_at, id);

-- Deliveries: one durable row per event per destination; id is the stable Svc-Delivery value.
-- endpoint_id is '' for a per-request webhook (url holds the destination then).
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    endpoint_id      TEXT NOT NULL DEFAULT '',
    account_id       TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    job_id           TEXT NOT NULL DEFAULT '',
    request_id       TEXT NOT NULL DEFAULT '',
    url              TEXT NOT NULL DEFAULT '',
    body             BYTEA NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    last_attempt_at  BIGINT,
    last_status_code INTEGER,
    last_error       TEXT NOT NULL DEFAULT '',
    close_reason     TEXT NOT NULL DEFAULT '',
    closed_at        BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt_at);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, status, created_at);
CREATE INDEX webhook_deliveries_open_age ON webhook_deliveries(status, created_at);
CREATE INDEX webhook_deliveries_job ON webhook_deliveries(account_id, job_id);

-- Ed25519 signing keys, the private seed sealed under the deployment secret.
CREATE TABLE webhook_signing_keys (
    kid         TEXT PRIMARY KEY,
    sealed      BYTEA NOT NULL,
    publish_at  BIGINT NOT NULL,
    active_from BIGINT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL
);

-- Destination host counters per minute, summed over the last hour, and the platform-wide pause.
CREATE TABLE webhook_host_minutes (
    host     TEXT NOT NULL,
    minute   BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, minute)
);
CREATE TABLE webhook_host_pauses (
    host         TEXT PRIMARY KEY,
    paused_until BIGINT NOT NULL
);

-- +goose Down
DROP TABLE webhook_host_pauses;
DROP TABLE webhook_host_minutes;
DROP TABLE webhook_signing_keys;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
