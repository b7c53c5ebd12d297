package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/jackc/pgx/v5"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// Transactions, pipelined. A submit is a short transaction of a few statements, and each
// round trip costs both processes a wake-up on top of the statement itself. A transaction runs
// on one connection of the pool and sends several statements at once (pgx.Batch):
//   - BEGIN is not sent alone: it goes with the transaction's first statement;
//   - a write whose only answer is its error (the job's insert, WriteAtCommit) waits, and goes
//     with the next statement or with the COMMIT;
//   - reads asked together (ReadAll: the hold's accounts, keys and in-flight counts) go
//     together, each a statement of its own.
//
// A batch of submits (jobs.Service's submit batcher; a submit alone is a batch of one) thus
// takes two round trips: BEGIN and the hold's three reads; then the charges, the inserts and
// the COMMIT. A waiting write that fails fails the statement it
// went with, or the COMMIT: its error is then the transaction's, as the write's own mapping
// gives it.

// pipeTx is the Querier of a pipelined transaction, on a connection held for it.
type pipeTx struct {
	conn    *pgx.Conn
	c       *Conn
	begun   bool           // BEGIN was sent
	waiting []waitingWrite // writes not sent yet, in order
}

type waitingWrite struct {
	sql    string
	args   []any
	mapErr func(error) error
}

// WriteAtCommit holds the write back until the transaction's next statement or its COMMIT.
func (p *pipeTx) WriteAtCommit(_ context.Context, sql string, args []any, mapErr func(error) error) error {
	p.c.statements.Add(1)
	p.waiting = append(p.waiting, waitingWrite{sql: sql, args: args, mapErr: mapErr})
	return nil
}

// ahead reports whether statements must go with the next one (BEGIN, waiting writes).
func (p *pipeTx) ahead() bool { return !p.begun || len(p.waiting) > 0 }

// sendAhead sends BEGIN and the waiting writes with one more statement, queued by last, and
// returns the batch's results positioned at that statement's.
func (p *pipeTx) sendAhead(ctx context.Context, last func(b *pgx.Batch)) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	begin := !p.begun
	if begin {
		b.Queue("BEGIN")
	}
	waiting := p.waiting
	for _, w := range waiting {
		b.Queue(w.sql, w.args...)
	}
	last(b)
	p.begun, p.waiting = true, nil
	p.c.roundTrips.Add(1)
	br := p.conn.SendBatch(ctx, b)
	if begin {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	for _, w := range waiting {
		if _, err := br.Exec(); err != nil {
			br.Close()
			if w.mapErr != nil {
				err = w.mapErr(err)
			}
			return nil, err
		}
	}
	return br, nil
}

func (p *pipeTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	p.c.statements.Add(1)
	if !p.ahead() {
		p.c.roundTrips.Add(1)
		tag, err := p.conn.Exec(ctx, q, args...)
		return driver.RowsAffected(tag.RowsAffected()), err
	}
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) { b.Queue(q, args...) })
	if err != nil {
		return nil, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return driver.RowsAffected(tag.RowsAffected()), err
}

func (p *pipeTx) QueryRowContext(ctx context.Context, q string, args ...any) sqlstore.Row {
	p.c.statements.Add(1)
	if !p.ahead() {
		p.c.roundTrips.Add(1)
		return p.conn.QueryRow(ctx, q, args...)
	}
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) { b.Queue(q, args...) })
	if err != nil {
		return errRow{err}
	}
	return batchRow{br: br}
}

func (p *pipeTx) QueryContext(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	p.c.statements.Add(1)
	if !p.ahead() {
		p.c.roundTrips.Add(1)
		r, err := p.conn.Query(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		return pgxRows{Rows: r}, nil
	}
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) { b.Queue(q, args...) })
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return pgxRows{Rows: r, br: br}, nil
}

// ReadAll sends reads together, with BEGIN and the waiting writes when they are due, in one
// round trip.
func (p *pipeTx) ReadAll(ctx context.Context, reads []sqlstore.Read, row func(int, sqlstore.Row) error) error {
	p.c.statements.Add(int64(len(reads)))
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) {
		for _, r := range reads {
			b.Queue(r.SQL, r.Args...)
		}
	})
	if err != nil {
		return err
	}
	return readBatch(br, len(reads), row)
}

// readBatch reads the answers of n reads from br, calling row(i, ...) on each row of the
// i-th, and ends the batch.
func readBatch(br pgx.BatchResults, n int, row func(int, sqlstore.Row) error) error {
	var err error
	for i := 0; i < n && err == nil; i++ {
		var rows pgx.Rows
		if rows, err = br.Query(); err != nil {
			break
		}
		for rows.Next() && err == nil {
			err = row(i, rows)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// commit sends COMMIT with whatever is still waiting; a transaction that sent nothing commits
// nothing.
func (p *pipeTx) commit(ctx context.Context) error {
	if !p.begun && len(p.waiting) == 0 {
		return nil
	}
	if !p.ahead() {
		p.c.roundTrips.Add(1)
		_, err := p.conn.Exec(ctx, "COMMIT")
		return err
	}
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) { b.Queue("COMMIT") })
	if err != nil {
		return err
	}
	_, err = br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// rollback ends a transaction that began; its error means the connection is not fit to be
// used again.
func (p *pipeTx) rollback(ctx context.Context) error {
	if !p.begun {
		return nil
	}
	p.c.roundTrips.Add(1)
	// Whatever ended the transaction, the ROLLBACK is sent, within its own bound.
	ctx, cancel := p.c.bounded(context.WithoutCancel(ctx))
	defer cancel()
	_, err := p.conn.Exec(ctx, "ROLLBACK")
	return err
}

// batchRow is a one-row result read from a batch: scanning it reads the row and ends the batch.
type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// pgxRows is pgx's rows as a Rows; rows read from a batch end it when closed.
type pgxRows struct {
	pgx.Rows
	br     pgx.BatchResults
	cancel context.CancelFunc // ends the read's bound (a read of the pool)
}

func (r pgxRows) Close() error {
	r.Rows.Close()
	err := r.Rows.Err()
	if r.br != nil {
		if cerr := r.br.Close(); err == nil {
			err = cerr
		}
	}
	if r.cancel != nil {
		r.cancel()
	}
	return err
}
