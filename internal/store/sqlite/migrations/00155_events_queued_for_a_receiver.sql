-- +goose Up
-- An event waits in events_pending only when something may receive it: a per-request
-- callback (webhook), or an endpoint of its account, whatever that endpoint's state (the relay
-- decides at fan-out which ones take it, as before). An account without endpoints, whose jobs
-- carry no callback, has nothing to fan out: its events are written once, to events, and never
-- queued, read by the relay and deleted.
DROP TRIGGER events_enqueue;
-- +goose StatementBegin
CREATE TRIGGER events_enqueue AFTER INSERT ON events
WHEN NEW.webhook <> '' OR EXISTS (SELECT 1 FROM webhook_endpoints WHERE account_id = NEW.account_id)
BEGIN
    INSERT INTO events_pending VALUES (NEW.seq, NEW.account_id, NEW.id, NEW.job_id, NEW.request_id, NEW.type,
        NEW.product, NEW.status, NEW.error_code, NEW.charged, NEW.reserved, NEW.webhook, NEW.created_at);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER events_enqueue;
-- +goose StatementBegin
CREATE TRIGGER events_enqueue AFTER INSERT ON events
BEGIN
    INSERT INTO events_pending VALUES (NEW.seq, NEW.account_id, NEW.id, NEW.job_id, NEW.request_id, NEW.type,
        NEW.product, NEW.status, NEW.error_code, NEW.charged, NEW.reserved, NEW.webhook, NEW.created_at);
END;
-- +goose StatementEnd
