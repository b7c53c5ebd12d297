package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// qPendingEvents reads the events not yet fanned out, oldest first, from their queue
// events_pending (a trigger adds a copy of each event written that a callback or an endpoint
// of its account may receive, migration 00155; MarkFannedOut deletes it): one range of its
// key, whose cost follows what waits, never the history (a hot query, Explain).
const qPendingEvents = `SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved,
 webhook, created_at FROM events_pending ORDER BY seq LIMIT $1`

// WebhookOutbox is the webhooks.Outbox view of the jobs events table.
type WebhookOutbox struct{ *DB }

var _ webhooks.Outbox = WebhookOutbox{}

func (s WebhookOutbox) Pending(ctx context.Context, limit int) ([]webhooks.OutboxEvent, error) {
	rows, err := s.sql.QueryContext(ctx, qPendingEvents, limit)
	return collect(rows, err, func(r Row) (webhooks.OutboxEvent, error) {
		var e webhooks.OutboxEvent
		var created int64
		err := r.Scan(&e.Seq, &e.Account, &e.ID, &e.JobID, &e.RequestID, &e.Type, &e.Product, &e.Status, &e.ErrorCode, &e.Charged,
			&e.Reserved, &e.Webhook, &created)
		e.CreatedAt = fromMicros(created)
		return e, err
	})
}

// MarkFannedOut takes the events out of the queue in one statement (the relay hands up to its
// batch at once), the numbers passed as one JSON array so the statement's text is always the
// same (prepared once). On SQLite the statement joins the group commit instead of paying a
// COMMIT of its own.
func (s WebhookOutbox) MarkFannedOut(ctx context.Context, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	list, err := json.Marshal(seqs)
	if err != nil {
		return err
	}
	return s.InOneStatement(ctx, func(tx *Tx) error {
		_, err := tx.q.ExecContext(ctx, tx.sql.markFannedOut, string(list))
		return err
	})
}
