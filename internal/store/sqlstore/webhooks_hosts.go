package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// The hosts' counts are shared by every process on the database, so a host's pause is
// platform-wide: attempts and failures are counted per host per minute and summed over the
// last hour; reaching either threshold pauses the host for webhooks.HostPause and starts its
// counts afresh. They are written with the attempts' records (RecordAttempts).

// SweepState reads the endpoints of ids and the hosts paused at now in one round trip (on
// PostgreSQL). The pauses table holds a row per host ever paused: a handful.
func (s Webhooks) SweepState(ctx context.Context, ids []string, now time.Time) (webhooks.SweepState, error) {
	st := webhooks.SweepState{Endpoints: map[string]webhooks.Endpoint{}, Paused: map[string]time.Time{}}
	reads := []Read{NewRead(qSweepEndpoints[s.d.name], s.d.list(ids)),
		NewRead(`SELECT host, paused_until FROM webhook_host_pauses WHERE paused_until > $1`, micros(now))}
	err := s.sql.ReadAll(ctx, reads, func(i int, row Row) error {
		if i == 0 {
			e, err := scanEndpoint(row)
			st.Endpoints[e.ID] = e
			return err
		}
		var host string
		var until int64
		err := row.Scan(&host, &until)
		st.Paused[host] = fromMicros(until)
		return err
	})
	return st, err
}

// qSweepEndpoints reads the endpoints of a list of ids ($1), each database's way.
var qSweepEndpoints = map[Dialect]string{
	Postgres: `SELECT ` + endpointCols + ` FROM webhook_endpoints WHERE id = ANY($1::text[])`,
	SQLite:   `SELECT ` + endpointCols + ` FROM webhook_endpoints WHERE id IN (SELECT value FROM json_each($1))`,
}

// countHosts counts the tallies' attempts, hosts in name order (two processes counting the
// same hosts take their rows in the same order), and answers each tally's pause.
func (s Webhooks) countHosts(ctx context.Context, tx *Tx, now time.Time, tallies []webhooks.HostTally) ([]time.Time, error) {
	maxAttempts, maxFailures := s.HostMaxAttempts, s.HostMaxFailures
	if maxAttempts <= 0 {
		maxAttempts = webhooks.HostMaxDeliveriesPerHour
	}
	if maxFailures <= 0 {
		maxFailures = webhooks.HostMaxFailuresPerHour
	}
	order := make([]int, len(tallies))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(tallies[a].Host, tallies[b].Host) })
	paused := make([]time.Time, len(tallies))
	for _, i := range order {
		until, err := tx.countHost(ctx, now, tallies[i], maxAttempts, maxFailures)
		if err != nil {
			return nil, err
		}
		paused[i] = until
	}
	return paused, nil
}

// count adds t to its host's minute, drops minutes older than the hour, and pauses the host
// when the hour's sums reach a threshold (its counts then start afresh). It answers when the
// host's pause ends (zero: not paused). The writes go with the read of the sums (one round trip
// on PostgreSQL), a pause with the COMMIT.
func (tx *Tx) countHost(ctx context.Context, now time.Time, t webhooks.HostTally, maxAttempts, maxFailures int) (time.Time, error) {
	minute := now.Unix() / 60
	if err := tx.q.WriteAtCommit(ctx, `INSERT INTO webhook_host_minutes (host, minute, attempts, failures) VALUES ($1, $2, $3, $4)
 ON CONFLICT (host, minute) DO UPDATE SET attempts = webhook_host_minutes.attempts + $3, failures = webhook_host_minutes.failures + $4`,
		[]any{t.Host, minute, t.Attempts, t.Failures}, nil); err != nil {
		return time.Time{}, err
	}
	// The window is the last 60 minutes, this one included; older minutes are dropped.
	if err := tx.q.WriteAtCommit(ctx, `DELETE FROM webhook_host_minutes WHERE host = $1 AND minute <= $2`, []any{t.Host, minute - 60}, nil); err != nil {
		return time.Time{}, err
	}
	var attempts, failures sql.NullInt64
	var until sql.NullInt64
	err := tx.q.ReadAll(ctx, []Read{NewRead(`SELECT sum(attempts), sum(failures), (SELECT paused_until FROM webhook_host_pauses WHERE host = $1)
 FROM webhook_host_minutes WHERE host = $1`, t.Host)}, func(_ int, row Row) error { return row.Scan(&attempts, &failures, &until) })
	if err != nil {
		return time.Time{}, err
	}
	if attempts.Int64 < int64(maxAttempts) && failures.Int64 < int64(maxFailures) {
		if until.Valid && now.Before(fromMicros(until.Int64)) {
			return fromMicros(until.Int64), nil
		}
		return time.Time{}, nil
	}
	end := now.Add(webhooks.HostPause)
	if err := tx.q.WriteAtCommit(ctx, `INSERT INTO webhook_host_pauses (host, paused_until) VALUES ($1, $2)
 ON CONFLICT (host) DO UPDATE SET paused_until = $2`, []any{t.Host, micros(end)}, nil); err != nil {
		return time.Time{}, err
	}
	return end, tx.q.WriteAtCommit(ctx, `DELETE FROM webhook_host_minutes WHERE host = $1`, []any{t.Host}, nil)
}
