package sqlstore

import (
	"context"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// WebhookKeys is the webhooks.KeyStore view of a DB: the sealed Ed25519 signing keys.
type WebhookKeys struct{ *DB }

var _ webhooks.KeyStore = WebhookKeys{}

func (s WebhookKeys) ListSigningKeys(ctx context.Context) ([]webhooks.StoredKey, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT kid, sealed, publish_at, active_from, created_at FROM webhook_signing_keys ORDER BY active_from, kid`)
	return collect(rows, err, func(r Row) (webhooks.StoredKey, error) {
		var k webhooks.StoredKey
		var publish, active, created int64
		err := r.Scan(&k.KID, &k.Sealed, &publish, &active, &created)
		k.PublishAt, k.ActiveFrom, k.CreatedAt = fromMicros(publish), fromMicros(active), fromMicros(created)
		return k, err
	})
}

// InsertSigningKey adds a key; webhooks.ErrDuplicate when the kid or the active_from instant
// is taken.
func (s WebhookKeys) InsertSigningKey(ctx context.Context, k webhooks.StoredKey) error {
	_, err := s.sql.ExecContext(ctx, `INSERT INTO webhook_signing_keys (kid, sealed, publish_at, active_from, created_at) VALUES ($1, $2, $3, $4, $5)`,
		k.KID, k.Sealed, micros(k.PublishAt), micros(k.ActiveFrom), micros(k.CreatedAt))
	if isUniqueViolation(err) {
		return webhooks.ErrDuplicate
	}
	return err
}

func (s WebhookKeys) DeleteSigningKey(ctx context.Context, kid string) error {
	_, err := s.sql.ExecContext(ctx, `DELETE FROM webhook_signing_keys WHERE kid = $1`, kid)
	return err
}
