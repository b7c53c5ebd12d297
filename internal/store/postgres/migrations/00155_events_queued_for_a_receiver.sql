-- +goose Up
-- An event waits in events_pending only when something may receive it: a per-request
-- callback (webhook), or an endpoint of its account, whatever that endpoint's state (the relay
-- decides at fan-out which ones take it, as before). An account without endpoints, whose jobs
-- carry no callback, has nothing to fan out: its events are written once, to events, and never
-- queued, read by the relay and deleted.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events_pending
    SELECT w.seq, w.account_id, w.id, w.job_id, w.request_id, w.type, w.product, w.status, w.error_code, w.charged,
           w.reserved, w.webhook, w.created_at
    FROM written w
    WHERE w.webhook <> '' OR EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = w.account_id);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events_pending
    SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at
    FROM written;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
