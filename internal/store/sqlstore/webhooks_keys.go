package sqlstore

import (
	"context"
	"database/sql"
	"time"

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

// WebhookHosts is a webhooks.HostGate shared by every process on the database, so a host's
// pause is platform-wide: attempts and failures are counted per host per minute and summed
// over the last hour; reaching either threshold pauses the host for webhooks.HostPause and
// starts its counts afresh. Zero thresholds take the spec's figures.
type WebhookHosts struct {
	*DB
	MaxAttempts int // webhooks.HostMaxDeliveriesPerHour when zero
	MaxFailures int // webhooks.HostMaxFailuresPerHour when zero
}

var _ webhooks.HostGate = WebhookHosts{}

func (g WebhookHosts) PausedUntil(ctx context.Context, host string, now time.Time) (time.Time, error) {
	var until int64
	err := g.sql.QueryRowContext(ctx, `SELECT paused_until FROM webhook_host_pauses WHERE host = $1`, host).Scan(&until)
	if isNoRows(err) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	t := fromMicros(until)
	if !now.Before(t) {
		return time.Time{}, nil
	}
	return t, nil
}

func (g WebhookHosts) Record(ctx context.Context, host string, now time.Time, failed bool) error {
	maxAttempts, maxFailures := g.MaxAttempts, g.MaxFailures
	if maxAttempts <= 0 {
		maxAttempts = webhooks.HostMaxDeliveriesPerHour
	}
	if maxFailures <= 0 {
		maxFailures = webhooks.HostMaxFailuresPerHour
	}
	minute := now.Unix() / 60
	fail := boolInt(failed)
	return g.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.ExecContext(ctx, `INSERT INTO webhook_host_minutes (host, minute, attempts, failures) VALUES ($1, $2, 1, $3)
 ON CONFLICT (host, minute) DO UPDATE SET attempts = webhook_host_minutes.attempts + 1, failures = webhook_host_minutes.failures + $3`,
			host, minute, fail); err != nil {
			return err
		}
		// The window is the last 60 minutes, this one included; older minutes are dropped.
		if _, err := tx.q.ExecContext(ctx, `DELETE FROM webhook_host_minutes WHERE host = $1 AND minute <= $2`, host, minute-60); err != nil {
			return err
		}
		var attempts, failures sql.NullInt64
		if err := tx.q.QueryRowContext(ctx, `SELECT sum(attempts), sum(failures) FROM webhook_host_minutes WHERE host = $1`, host).Scan(&attempts, &failures); err != nil {
			return err
		}
		if attempts.Int64 < int64(maxAttempts) && failures.Int64 < int64(maxFailures) {
			return nil
		}
		until := micros(now.Add(webhooks.HostPause))
		if _, err := tx.q.ExecContext(ctx, `INSERT INTO webhook_host_pauses (host, paused_until) VALUES ($1, $2)
 ON CONFLICT (host) DO UPDATE SET paused_until = $2`, host, until); err != nil {
			return err
		}
		_, err := tx.q.ExecContext(ctx, `DELETE FROM webhook_host_minutes WHERE host = $1`, host)
		return err
	})
}
