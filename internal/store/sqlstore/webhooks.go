package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// Webhooks is the webhooks.Store view of a DB: endpoints and their durable delivery rows.
// Every method is one transaction; it mirrors webhooks.MemStore and passes
// webhookstest.RunStoreSuite on both dialects.
type Webhooks struct {
	*DB
	// A host is paused after this many attempts or failures within an hour; zero takes the
	// spec's figures (webhooks.HostMaxDeliveriesPerHour, webhooks.HostMaxFailuresPerHour).
	HostMaxAttempts, HostMaxFailures int
}

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
	return tx.q.WriteAtCommit(ctx, `UPDATE webhook_endpoints SET status = $2, verified = $3, verified_at = $4, consecutive_failures = $5,
 last_success_at = $6, last_failure_at = $7, last_status_code = $8, disabled_reason = $9, verification = $10, dead_at = $11 WHERE id = $1`,
		[]any{e.ID, string(e.Status), boolInt(e.Verified), nullMicros(e.VerifiedAt), e.ConsecutiveFailures, nullMicros(e.LastSuccessAt),
			nullMicros(e.LastFailureAt), nullInt(e.LastStatusCode), e.DisabledReason, verification, nullMicros(e.DeadAt)}, nil)
}

// CreateEndpoint inserts a pending endpoint, counting the account's endpoints that are not
// dead in the same transaction (on PostgreSQL under a per-account advisory lock, so two
// concurrent registrations cannot both take the last place).
func (s Webhooks) CreateEndpoint(ctx context.Context, p webhooks.CreateEndpointParams) (webhooks.Endpoint, error) {
	var out webhooks.Endpoint
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.roomForEndpoint(ctx, p.Account, p.MaxNotDead); err != nil {
			return err
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

// roomForEndpoint refuses ErrTooManyWebhooks when account already has limit endpoints not dead
// (never when limit is 0), counted in the caller's transaction under a per-account lock on
// PostgreSQL, so that two transactions cannot both take the last place.
func (tx *Tx) roomForEndpoint(ctx context.Context, account string, limit int) error {
	if limit <= 0 {
		return nil
	}
	if lock := tx.sql.lockKey; lock != "" {
		if _, err := tx.q.ExecContext(ctx, lock, "webhooks:"+account); err != nil {
			return err
		}
	}
	var n int
	if err := tx.q.QueryRowContext(ctx, `SELECT count(*) FROM webhook_endpoints WHERE account_id = $1 AND status <> 'dead'`, account).Scan(&n); err != nil {
		return err
	}
	if n >= limit {
		return webhooks.ErrTooManyWebhooks
	}
	return nil
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
		if e.Status == webhooks.StatusDead {
			if err := tx.roomForEndpoint(ctx, e.Account, p.MaxNotDead); err != nil {
				return err
			}
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
		statusOf, err := tx.endpointStatuses(ctx, p.Deliveries)
		if err != nil {
			return err
		}
		var rows [][]any
		for _, n := range p.Deliveries {
			status := webhooks.DeliveryScheduled
			if n.EndpointID != "" {
				switch statusOf[n.EndpointID] {
				case webhooks.StatusActive:
				case webhooks.StatusDisabled:
					status = webhooks.DeliveryHeld
				default:
					continue // pending, dead or deleted: nothing is queued
				}
			}
			body := n.Body
			if body == nil {
				body = []byte{}
			}
			rows = append(rows, []any{n.ID, n.EndpointID, n.Account, n.EventID, n.EventType, n.JobID, n.RequestID, n.URL, body,
				string(status), micros(p.Now), micros(p.Now)})
		}
		inserted := map[string]bool{}
		for len(rows) > 0 {
			chunk := rows[:min(len(rows), enqueueChunk)]
			rows = rows[len(chunk):]
			if err := tx.insertDeliveries(ctx, chunk, inserted); err != nil {
				return err
			}
		}
		for _, n := range p.Deliveries {
			if inserted[n.ID] {
				ids = append(ids, n.ID)
				delete(inserted, n.ID)
			}
		}
		return nil
	})
	return ids, err
}

// enqueueChunk is the rows one INSERT of deliveries carries (12 parameters each).
const enqueueChunk = 256

// endpointStatuses reads the status of the deliveries' endpoints, locked so that a concurrent
// disable (which holds the endpoint's scheduled rows) cannot miss a row inserted here.
func (tx *Tx) endpointStatuses(ctx context.Context, ds []webhooks.NewDelivery) (map[string]webhooks.EndpointStatus, error) {
	var ids []string
	out := map[string]webhooks.EndpointStatus{}
	for _, n := range ds {
		if _, ok := out[n.EndpointID]; n.EndpointID != "" && !ok {
			out[n.EndpointID] = ""
			ids = append(ids, n.EndpointID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	err := tx.q.ReadAll(ctx, []Read{NewRead(qRecordEndpoints[tx.sql.name], tx.list(ids))}, func(_ int, row Row) error {
		e, err := scanEndpoint(row)
		out[e.ID] = e.Status
		return err
	})
	return out, err
}

// deliveryColumns is how many columns insertDeliveries writes a row.
const deliveryColumns = 12

// insertDeliveries inserts rows of deliveryColumns each (skipping ids that exist) in one
// statement and marks the ids inserted.
func (tx *Tx) insertDeliveries(ctx context.Context, rows [][]any, inserted map[string]bool) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_id, event_type, job_id, request_id, url, body,
 status, next_attempt_at, created_at) VALUES `)
	args := make([]any, 0, len(rows)*deliveryColumns)
	for _, r := range rows {
		args = append(args, r...)
	}
	writeValues(&q, len(rows), deliveryColumns)
	q.WriteString(` ON CONFLICT (id) DO NOTHING RETURNING id`)
	return eachRow(tx.q.QueryContext(ctx, q.String(), args...))(func(row Row) error {
		var id string
		err := row.Scan(&id)
		inserted[id] = true
		return err
	})
}

// ClaimDue picks due rows, at most PerEndpoint per endpoint (a window over the due rows),
// locks them (SKIP LOCKED on PostgreSQL, so concurrent sweeps take disjoint rows) and leases
// them until LeaseUntil.
// qLeaseDeliveries leases the deliveries a claim took (a list of ids, $2) until $1.
var qLeaseDeliveries = map[Dialect]string{
	Postgres: `UPDATE webhook_deliveries SET next_attempt_at = $1 WHERE id = ANY($2::text[])`,
	SQLite:   `UPDATE webhook_deliveries SET next_attempt_at = $1 WHERE id IN (SELECT value FROM json_each($2))`,
}

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
		ids := make([]string, len(got))
		for i := range got {
			ids[i] = got[i].ID
			got[i].NextAttemptAt = p.LeaseUntil
		}
		if len(ids) > 0 {
			if err := tx.q.WriteAtCommit(ctx, qLeaseDeliveries[tx.sql.name], []any{micros(p.LeaseUntil), tx.list(ids)}, nil); err != nil {
				return err
			}
		}
		out = got
		return nil
	})
	return out, err
}

// The reads of RecordAttempts, each database's, of lists of ids ($1): the deliveries, then
// their endpoints, locked in id order.
var (
	qRecordDeliveries = map[Dialect]string{
		Postgres: `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
		SQLite:   `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE id IN (SELECT value FROM json_each($1))`,
	}
	qRecordEndpoints = map[Dialect]string{
		Postgres: `SELECT ` + endpointCols + ` FROM webhook_endpoints WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
		SQLite:   `SELECT ` + endpointCols + ` FROM webhook_endpoints WHERE id IN (SELECT value FROM json_each($1))`,
	}
)

// RecordAttempts reads the attempts' deliveries and endpoints together (one round trip on
// PostgreSQL), applies each attempt in order to them, writes the changes at commit, and counts
// the hosts (webhooks_hosts.go).
func (s Webhooks) RecordAttempts(ctx context.Context, b webhooks.AttemptBatch) (webhooks.BatchRecorded, error) {
	var out webhooks.BatchRecorded
	err := s.InTx(ctx, func(tx *Tx) error {
		out = webhooks.BatchRecorded{Attempts: make([]webhooks.Recorded, len(b.Attempts))}
		if len(b.Attempts) > 0 {
			ds, es, err := tx.attemptRows(ctx, b.Attempts)
			if err != nil {
				return err
			}
			for i, p := range b.Attempts {
				if out.Attempts[i], err = tx.recordAttempt(ctx, p, ds, es); err != nil {
					return err
				}
			}
		}
		var err error
		out.HostPausedUntil, err = s.countHosts(ctx, tx, b.Now, b.Hosts)
		return err
	})
	return out, err
}

// attemptRows reads, locked, the deliveries of ps and their endpoints, by id.
func (tx *Tx) attemptRows(ctx context.Context, ps []webhooks.AttemptParams) (map[string]webhooks.Delivery, map[string]webhooks.Endpoint, error) {
	var dIDs, eIDs []string
	seen := map[string]bool{}
	for _, p := range ps {
		dIDs = append(dIDs, p.DeliveryID)
		if p.EndpointID != "" && !seen[p.EndpointID] {
			seen[p.EndpointID] = true
			eIDs = append(eIDs, p.EndpointID)
		}
	}
	ds, es := map[string]webhooks.Delivery{}, map[string]webhooks.Endpoint{}
	reads := []Read{NewRead(qRecordDeliveries[tx.sql.name], tx.list(dIDs)), NewRead(qRecordEndpoints[tx.sql.name], tx.list(eIDs))}
	err := tx.q.ReadAll(ctx, reads, func(i int, row Row) error {
		if i == 0 {
			d, err := scanDelivery(row)
			ds[d.ID] = d
			return err
		}
		e, err := scanEndpoint(row)
		es[e.ID] = e
		return err
	})
	return ds, es, err
}

// recordAttempt applies p to its delivery and endpoint (as read in ds and es, and kept there
// for the batch's next attempts) and writes them at commit.
func (tx *Tx) recordAttempt(ctx context.Context, p webhooks.AttemptParams, ds map[string]webhooks.Delivery, es map[string]webhooks.Endpoint) (webhooks.Recorded, error) {
	d, ok := ds[p.DeliveryID]
	if !ok {
		return webhooks.Recorded{Gone: true}, nil // deleted with its endpoint meanwhile
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
	ds[d.ID] = d
	if err := tx.q.WriteAtCommit(ctx, `UPDATE webhook_deliveries SET attempts = $2, last_attempt_at = $3, last_status_code = $4, last_error = $5,
 status = $6, next_attempt_at = $7, close_reason = $8, closed_at = $9 WHERE id = $1`,
		[]any{d.ID, d.Attempts, nullMicros(d.LastAttemptAt), nullInt(d.LastStatusCode), d.LastError, string(d.Status), micros(d.NextAttemptAt),
			d.CloseReason, nullMicros(d.ClosedAt)}, nil); err != nil {
		return webhooks.Recorded{}, err
	}
	if p.EndpointID == "" {
		return webhooks.Recorded{}, nil
	}
	e, ok := es[p.EndpointID]
	if !ok {
		return webhooks.Recorded{Gone: true}, nil
	}
	if p.Effect == webhooks.EffectNone {
		return webhooks.Recorded{Endpoint: e}, nil
	}
	hold := webhooks.ApplyEffect(&e, p)
	es[e.ID] = e
	if err := tx.saveEndpoint(ctx, e); err != nil {
		return webhooks.Recorded{}, err
	}
	if hold {
		if err := tx.q.WriteAtCommit(ctx, `UPDATE webhook_deliveries SET status = 'held' WHERE endpoint_id = $1 AND status = 'scheduled'`,
			[]any{e.ID}, nil); err != nil {
			return webhooks.Recorded{}, err
		}
		for id, o := range ds {
			if o.EndpointID == e.ID && o.Status == webhooks.DeliveryScheduled {
				o.Status = webhooks.DeliveryHeld
				ds[id] = o
			}
		}
	}
	return webhooks.Recorded{Endpoint: e}, nil
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
