-- +goose Up
-- The console lists an endpoint's latest deliveries, newest first: this index answers that
-- read with as many rows as it shows, whatever the endpoint's history.
CREATE INDEX webhook_deliveries_recent ON webhook_deliveries(endpoint_id, created_at, id);

-- +goose Down
DROP INDEX webhook_deliveries_recent;
