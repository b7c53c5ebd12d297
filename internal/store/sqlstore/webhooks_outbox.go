package sqlstore

import (
	"context"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// WebhookOutbox is the webhooks.Outbox view of the jobs events table.
type WebhookOutbox struct{ *DB }

var _ webhooks.Outbox = WebhookOutbox{}

func (s WebhookOutbox) Pending(ctx context.Context, limit int) ([]webhooks.OutboxEvent, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved,
 webhook, created_at FROM events WHERE fanned_out = 0 ORDER BY seq LIMIT $1`, limit)
	return collect(rows, err, func(r scanner) (webhooks.OutboxEvent, error) {
		var e webhooks.OutboxEvent
		var created int64
		err := r.Scan(&e.Seq, &e.Account, &e.ID, &e.JobID, &e.RequestID, &e.Type, &e.Product, &e.Status, &e.ErrorCode, &e.Charged,
			&e.Reserved, &e.Webhook, &created)
		e.CreatedAt = fromMicros(created)
		return e, err
	})
}

func (s WebhookOutbox) MarkFannedOut(ctx context.Context, seqs []int64) error {
	return s.InTx(ctx, func(tx *Tx) error {
		for _, seq := range seqs {
			if _, err := tx.q.ExecContext(ctx, `UPDATE events SET fanned_out = 1 WHERE seq = $1`, seq); err != nil {
				return err
			}
		}
		return nil
	})
}
