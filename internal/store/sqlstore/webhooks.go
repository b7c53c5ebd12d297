package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// Webhooks is the webhooks.Store view of a DB: endpoints and their durable delivery rows.
// Every method is one transaction; it mirrors webhooks.MemStore and passes
// webhookstest.RunStoreSuite on both dialects.
type Webhooks struct{ *DB }

var _ webhooks.Store = Webhooks{}

const endpointCols = `id, account_id, url, products, status, created_at, verified, verified_at, consecutive_failures,
 last_success_at, last_failure_at, last_status_code, disabled_reason, verification, dead_at`

const deliveryCols = `id, endpoint_id, account_id, event_id, event_type, job_id, request_id, url, body, status, attempts,
 next_attempt_at, created_at, last_attempt_at, last_status_code, last_error, close_reason, closed_at`

type Row interface{ Scan(...any) error }

func nullInt(p *int) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*p), Valid: true}
}

func intPtr(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	i := int(v.Int64)
	return &i
}

func scanEndpoint(row Row) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	var products, status, verification string
	var created int64
	var verified int
	var verifiedAt, lastSuccess, lastFailure, lastCode, deadAt sql.NullInt64
	err := row.Scan(&e.ID, &e.Account, &e.URL, &products, &status, &created, &verified, &verifiedAt, &e.ConsecutiveFailures,
		&lastSuccess, &lastFailure, &lastCode, &e.DisabledReason, &verification, &deadAt)
	if isNoRows(err) {
		return e, webhooks.ErrNotFound
	}
	if err != nil {
		return e, err
	}
	e.Status, e.CreatedAt, e.Verified = webhooks.EndpointStatus(status), fromMicros(created), verified == 1
	e.VerifiedAt, e.LastSuccessAt, e.LastFailureAt, e.DeadAt = timePtr(verifiedAt), timePtr(lastSuccess), timePtr(lastFailure), timePtr(deadAt)
	e.LastStatusCode = intPtr(lastCode)
	if products != "" {
		if err := json.Unmarshal([]byte(products), &e.Products); err != nil {
			return e, err
		}
	}
	if verification != "" {
		var v webhooks.Verification
		if err := json.Unmarshal([]byte(verification), &v); err != nil {
			return e, err
		}
		e.Verification = &v
	}
	return e, nil
}

func scanDelivery(row Row) (webhooks.Delivery, error) {
	var d webhooks.Delivery
	var status string
	var next, created int64
	var lastAttempt, lastCode, closed sql.NullInt64
	err := row.Scan(&d.ID, &d.EndpointID, &d.Account, &d.EventID, &d.EventType, &d.JobID, &d.RequestID, &d.URL, &d.Body,
		&status, &d.Attempts, &next, &created, &lastAttempt, &lastCode, &d.LastError, &d.CloseReason, &closed)
	if isNoRows(err) {
		return d, webhooks.ErrNotFound
	}
	if err != nil {
		return d, err
	}
	d.Status, d.NextAttemptAt, d.CreatedAt = webhooks.DeliveryStatus(status), fromMicros(next), fromMicros(created)
	d.LastAttemptAt, d.LastStatusCode, d.ClosedAt = timePtr(lastAttempt), intPtr(lastCode), timePtr(closed)
	return d, nil
}

func collect[T any](rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (tx *Tx) endpoint(ctx context.Context, id string, lock bool) (webhooks.Endpoint, error) {
	q := `SELECT ` + endpointCols + ` FROM webhook_endpoints WHERE id = $1`
	if lock {
		q += tx.forUpdate()
	}
	return scanEndpoint(tx.q.QueryRowContext(ctx, q, id))
}

func (tx *Tx) saveEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	var verification string
	if e.Verification != nil {
		b, err := json.Marshal(e.Verification)
		if err != nil {
			return err
		}
		verification = string(b)
	}
	_, err := tx.q.ExecContext(ctx, `UPDATE webhook_endpoints SET status = $2, verified = $3, verified_at = $4, consecutive_failures = $5,
 last_success_at = $6, last_failure_at = $7, last_status_code = $8, disabled_reason = $9, verification = $10, dead_at = $11 WHERE id = $1`,
		e.ID, string(e.Status), boolInt(e.Verified), nullMicros(e.VerifiedAt), e.ConsecutiveFailures, nullMicros(e.LastSuccessAt),
		nullMicros(e.LastFailureAt), nullInt(e.LastStatusCode), e.DisabledReason, verification, nullMicros(e.DeadAt))
	return err
}

// CreateEndpoint inserts a pending endpoint, counting the account's endpoints that are not
// dead in the same transaction (on PostgreSQL under a per-account advisory lock, so two
// concurrent registrations cannot both take the last place).
func (s Webhooks) CreateEndpoint(ctx context.Context, p webhooks.CreateEndpointParams) (webhooks.Endpoint, error) {
	var out webhooks.Endpoint
	err := s.InTx(ctx, func(tx *Tx) error {
		if lock := tx.sql.lockKey; lock != "" {
			if _, err := tx.q.ExecContext(ctx, lock, "webhooks:"+p.Account); err != nil {
				return err
			}
		}
		var n int
		if err := tx.q.QueryRowContext(ctx, `SELECT count(*) FROM webhook_endpoints WHERE account_id = $1 AND status <> 'dead'`, p.Account).Scan(&n); err != nil {
			return err
		}
		if p.MaxNotDead > 0 && n >= p.MaxNotDead {
			return webhooks.ErrTooManyWebhooks
		}
		products := ""
		if p.Products != nil {
			b, err := json.Marshal(p.Products)
			if err != nil {
				return err
			}
			products = string(b)
		}
		_, err := tx.q.ExecContext(ctx, `INSERT INTO webhook_endpoints (id, account_id, url, products, status, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			p.ID, p.Account, p.URL, products, string(webhooks.StatusPending), micros(p.Now))
		if isUniqueViolation(err) {
			return webhooks.ErrDuplicate
		}
		if err != nil {
			return err
		}
		out, err = tx.endpoint(ctx, p.ID, false)
		return err
	})
	return out, err
}

func (s Webhooks) GetEndpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	return s.direct().endpoint(ctx, id, false)
}

func (s Webhooks) ListEndpoints(ctx context.Context, account string) ([]webhooks.Endpoint, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE account_id = $1 ORDER BY created_at, id`, account)
	return collect(rows, err, scanEndpoint)
}

func (s Webhooks) RecordChallenge(ctx context.Context, p webhooks.RecordChallengeParams) (webhooks.ChallengeRecord, error) {
	var rec webhooks.ChallengeRecord
	err := s.InTx(ctx, func(tx *Tx) error {
		rec = webhooks.ChallengeRecord{}
		e, err := tx.endpoint(ctx, p.EndpointID, true)
		if err != nil {
			return err
		}
		if !p.Passed {
			if p.Verification != nil {
				v := *p.Verification
				e.Verification = &v
			}
			rec.Endpoint = e
			return tx.saveEndpoint(ctx, e)
		}
		now := p.Now
		e.Status, e.Verified, e.VerifiedAt = webhooks.StatusActive, true, &now
		e.Verification, e.DisabledReason, e.DeadAt, e.ConsecutiveFailures = nil, "", nil, 0
		if err := tx.saveEndpoint(ctx, e); err != nil {
			return err
		}
		rec.Endpoint = e
		// Held rows closed past the window, the rest released oldest first at the pace.
		n, err := tx.execN(ctx, `UPDATE webhook_deliveries SET status = 'failed', close_reason = $1, closed_at = $2
 WHERE endpoint_id = $3 AND status = 'held' AND created_at < $4`, webhooks.CloseHeldPastWindow, micros(p.Now), e.ID, micros(p.RetainFrom))
		if err != nil {
			return err
		}
		rec.Expired = n
		held, err := tx.ids(ctx, `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'held' ORDER BY created_at, id`, e.ID)
		if err != nil {
			return err
		}
		for i, id := range held {
			at := p.Now.Add(time.Duration(i) * p.ReleaseSpacing)
			if _, err := tx.q.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'scheduled', next_attempt_at = $1 WHERE id = $2`, micros(at), id); err != nil {
				return err
			}
		}
		rec.Released = len(held)
		return nil
	})
	return rec, err
}

func (tx *Tx) execN(ctx context.Context, q string, args ...any) (int, error) {
	res, err := tx.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (tx *Tx) ids(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := tx.q.QueryContext(ctx, q, args...)
	return collect(rows, err, func(r Row) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
}

func (s Webhooks) DeleteEndpoint(ctx context.Context, account, id string) (bool, error) {
	var existed bool
	err := s.InTx(ctx, func(tx *Tx) error {
		n, err := tx.execN(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, id, account)
		if err != nil {
			return err
		}
		existed = n > 0
		if !existed {
			return nil
		}
		_, err = tx.q.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND status IN ('scheduled', 'held')`, id)
		return err
	})
	return existed, err
}

func (s Webhooks) EnqueueDeliveries(ctx context.Context, p webhooks.EnqueueParams) ([]string, error) {
	var ids []string
	err := s.InTx(ctx, func(tx *Tx) error {
		ids = nil
		statusOf := map[string]webhooks.EndpointStatus{}
		for _, n := range p.Deliveries {
			status := webhooks.DeliveryScheduled
			if n.EndpointID != "" {
				st, ok := statusOf[n.EndpointID]
				if !ok {
					// Locked so a concurrent disable (which holds scheduled rows) cannot miss this one.
					e, err := tx.endpoint(ctx, n.EndpointID, true)
					switch {
					case err == nil:
						st = e.Status
					case errors.Is(err, webhooks.ErrNotFound):
						st = ""
					default:
						return err
					}
					statusOf[n.EndpointID] = st
				}
				switch st {
				case webhooks.StatusActive:
				case webhooks.StatusDisabled:
					status = webhooks.DeliveryHeld
				default:
					continue
				}
			}
			body := n.Body
			if body == nil {
				body = []byte{}
			}
			k, err := tx.execN(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_id, event_type, job_id, request_id, url, body,
 status, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
				n.ID, n.EndpointID, n.Account, n.EventID, n.EventType, n.JobID, n.RequestID, n.URL, body, string(status), micros(p.Now), micros(p.Now))
			if err != nil {
				return err
			}
			if k > 0 {
				ids = append(ids, n.ID)
			}
		}
		return nil
	})
	return ids, err
}

// ClaimDue picks due rows, at most PerEndpoint per endpoint (a window over the due rows),
// locks them (SKIP LOCKED on PostgreSQL, so concurrent sweeps take disjoint rows) and leases
// them until LeaseUntil.
func (s Webhooks) ClaimDue(ctx context.Context, p webhooks.ClaimParams) ([]webhooks.Delivery, error) {
	var out []webhooks.Delivery
	err := s.InTx(ctx, func(tx *Tx) error {
		out = nil
		perEndpoint := p.PerEndpoint
		if perEndpoint <= 0 {
			perEndpoint = 1 << 30
		}
		limit := p.Limit
		if limit <= 0 {
			limit = 1 << 30
		}
		args := []any{micros(p.Now), perEndpoint, limit}
		filter := ""
		if p.EndpointID != "" {
			args = append(args, p.EndpointID)
			filter += ` AND endpoint_id = $` + itoa(len(args))
		}
		if p.DeliveryID != "" {
			args = append(args, p.DeliveryID)
			filter += ` AND id = $` + itoa(len(args))
		}
		lock := tx.sql.claimLock
		q := `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE status = 'scheduled' AND next_attempt_at <= $1` + filter + ` AND id IN (
 SELECT id FROM (SELECT id, endpoint_id, row_number() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, created_at, id) AS rn
  FROM webhook_deliveries WHERE status = 'scheduled' AND next_attempt_at <= $1` + filter + `) ranked
 WHERE endpoint_id = '' OR rn <= $2)
 ORDER BY next_attempt_at, created_at, id LIMIT $3` + lock
		rows, err := tx.q.QueryContext(ctx, q, args...)
		got, err := collect(rows, err, scanDelivery)
		if err != nil {
			return err
		}
		for i := range got {
			if _, err := tx.q.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = $1 WHERE id = $2`, micros(p.LeaseUntil), got[i].ID); err != nil {
				return err
			}
			got[i].NextAttemptAt = p.LeaseUntil
		}
		out = got
		return nil
	})
	return out, err
}

func (s Webhooks) RecordAttempt(ctx context.Context, p webhooks.AttemptParams) (webhooks.Endpoint, error) {
	var out webhooks.Endpoint
	err := s.InTx(ctx, func(tx *Tx) error {
		out = webhooks.Endpoint{}
		d, err := scanDelivery(tx.q.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = $1`+tx.forUpdate(), p.DeliveryID))
		if err != nil {
			return err // ErrNotFound: deleted with its endpoint meanwhile
		}
		if p.Attempted {
			now := p.Now
			d.Attempts++
			d.LastAttemptAt, d.LastStatusCode, d.LastError = &now, p.StatusCode, p.Error
		}
		d.Status = p.Status
		switch p.Status {
		case webhooks.DeliveryScheduled:
			d.NextAttemptAt = p.NextAttemptAt
		case webhooks.DeliveryDelivered, webhooks.DeliveryFailed:
			now := p.Now
			d.CloseReason, d.ClosedAt = p.CloseReason, &now
		}
		if _, err := tx.q.ExecContext(ctx, `UPDATE webhook_deliveries SET attempts = $2, last_attempt_at = $3, last_status_code = $4, last_error = $5,
 status = $6, next_attempt_at = $7, close_reason = $8, closed_at = $9 WHERE id = $1`,
			d.ID, d.Attempts, nullMicros(d.LastAttemptAt), nullInt(d.LastStatusCode), d.LastError, string(d.Status), micros(d.NextAttemptAt),
			d.CloseReason, nullMicros(d.ClosedAt)); err != nil {
			return err
		}
		if p.EndpointID == "" || p.Effect == webhooks.EffectNone {
			if p.EndpointID == "" {
				return nil
			}
			e, err := tx.endpoint(ctx, p.EndpointID, false)
			if errors.Is(err, webhooks.ErrNotFound) {
				return nil
			}
			out = e
			return err
		}
		e, err := tx.endpoint(ctx, p.EndpointID, true)
		if err != nil {
			return err
		}
		now := p.Now
		hold := false
		switch p.Effect {
		case webhooks.EffectSuccess:
			e.ConsecutiveFailures, e.LastSuccessAt, e.LastStatusCode = 0, &now, p.StatusCode
		case webhooks.EffectFailure, webhooks.EffectGone:
			e.ConsecutiveFailures++
			e.LastFailureAt = &now
			if p.StatusCode != nil {
				e.LastStatusCode = p.StatusCode
			}
			if p.Effect == webhooks.EffectGone && e.Status != webhooks.StatusDead {
				e.Status, e.DisabledReason, e.DeadAt = webhooks.StatusDead, webhooks.ReasonEndpointGone, &now
				hold = true
			} else if e.Status == webhooks.StatusActive && p.DisableAfter > 0 && e.ConsecutiveFailures >= p.DisableAfter {
				e.Status, e.DisabledReason = webhooks.StatusDisabled, webhooks.ReasonTooManyFailures
				hold = true
			}
		}
		if err := tx.saveEndpoint(ctx, e); err != nil {
			return err
		}
		if hold {
			if _, err := tx.q.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'held' WHERE endpoint_id = $1 AND status = 'scheduled'`, e.ID); err != nil {
				return err
			}
		}
		out = e
		return nil
	})
	return out, err
}

func (s Webhooks) ExpireOld(ctx context.Context, p webhooks.ExpireParams) (int, error) {
	return s.direct().execN(ctx, `UPDATE webhook_deliveries SET status = 'failed', close_reason = $1, closed_at = $2
 WHERE status IN ('scheduled', 'held') AND created_at < $3`, webhooks.CloseHeldPastWindow, micros(p.Now), micros(p.CreatedBefore))
}

func (s Webhooks) GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error) {
	return scanDelivery(s.sql.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = $1`, id))
}

func (s Webhooks) ListDeliveries(ctx context.Context, p webhooks.ListDeliveriesParams) ([]webhooks.Delivery, error) {
	var where []string
	var args []any
	add := func(col, v string) {
		if v != "" {
			args = append(args, v)
			where = append(where, col+" = $"+itoa(len(args)))
		}
	}
	add("endpoint_id", p.EndpointID)
	add("account_id", p.Account)
	add("job_id", p.JobID)
	q := `SELECT ` + deliveryCols + ` FROM webhook_deliveries`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.sql.QueryContext(ctx, q+` ORDER BY created_at, id`, args...)
	return collect(rows, err, scanDelivery)
}

// RecentDeliveries reads the endpoint's newest rows through webhook_deliveries_recent
// (endpoint_id, created_at, id): LIMIT rows, whatever the endpoint's history.
func (s Webhooks) RecentDeliveries(ctx context.Context, endpointID string, limit int) ([]webhooks.Delivery, error) {
	rows, err := s.sql.QueryContext(ctx, qRecentDeliveries, endpointID, limit)
	return collect(rows, err, scanDelivery)
}
