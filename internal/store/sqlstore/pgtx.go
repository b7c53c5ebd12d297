package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The jobs engine's transactions on PostgreSQL, pipelined. A submit is a short transaction of
// a few statements, and each round trip costs both processes a wake-up on top of the
// statement itself. Here a transaction runs on one connection through pgx's own interface,
// which can send several statements at once (database/sql cannot):
//   - BEGIN is not sent alone: it goes with the transaction's first statement;
//   - a write whose only answer is its error (the job's insert, writeAtCommit) waits, and goes
//     with the next statement or with the COMMIT;
//   - reads asked together (readAll: the hold's accounts, keys and in-flight counts) go
//     together, each a statement of its own.
//
// A batch of submits (jobs.Service's submit batcher; a submit alone is a batch of one) thus
// takes two round trips: BEGIN and the hold's three reads; then the charges, the inserts and
// the COMMIT. A waiting write that fails fails the statement it
// went with, or the COMMIT: its error is then the transaction's, as the write's own mapping
// gives it.

// pipeTx is the querier of a pipelined transaction, on a connection held for it.
type pipeTx struct {
	conn    *pgx.Conn
	c       *conn
	begun   bool           // BEGIN was sent
	waiting []waitingWrite // writes not sent yet, in order
}

type waitingWrite struct {
	sql    string
	args   []any
	mapErr func(error) error
}

// atCommit is a querier that can hold a write back until its next statement or its COMMIT.
type atCommit interface {
	writeAtCommit(sql string, args []any, mapErr func(error) error)
}

func (p *pipeTx) writeAtCommit(sql string, args []any, mapErr func(error) error) {
	p.c.statements.Add(1)
	p.waiting = append(p.waiting, waitingWrite{sql: sql, args: args, mapErr: mapErr})
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
	p.c.pipeTrips.Add(1)
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
		p.c.pipeTrips.Add(1)
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

func (p *pipeTx) QueryRowContext(ctx context.Context, q string, args ...any) scanner {
	p.c.statements.Add(1)
	if !p.ahead() {
		p.c.pipeTrips.Add(1)
		return p.conn.QueryRow(ctx, q, args...)
	}
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) { b.Queue(q, args...) })
	if err != nil {
		return errRow{err}
	}
	return batchRow{br: br}
}

func (p *pipeTx) QueryContext(ctx context.Context, q string, args ...any) (rowSet, error) {
	p.c.statements.Add(1)
	if !p.ahead() {
		p.c.pipeTrips.Add(1)
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

// readAll sends reads together, with BEGIN and the waiting writes when they are due, in one
// round trip.
func (p *pipeTx) readAll(ctx context.Context, reads []read, row func(int, scanner) error) error {
	p.c.statements.Add(int64(len(reads)))
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) {
		for _, r := range reads {
			b.Queue(r.sql, r.args...)
		}
	})
	if err != nil {
		return err
	}
	for i := range reads {
		if err == nil {
			err = eachRow(batchRows(br.Query()))(func(s scanner) error { return row(i, s) })
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
		p.c.pipeTrips.Add(1)
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
	p.c.pipeTrips.Add(1)
	_, err := p.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	return err
}

// inPipelinedTx runs fn as one pipelined transaction on a connection of the pool.
func (db *DB) inPipelinedTx(ctx context.Context, fn func(*Tx) error) error {
	sc, err := db.sql.raw.Conn(ctx)
	if err != nil {
		return err
	}
	defer sc.Close()
	var txErr error
	err = sc.Raw(func(dc any) error {
		p := &pipeTx{conn: dc.(*stdlib.Conn).Conn(), c: db.sql}
		db.sql.transactions.Add(1)
		db.sql.commits.Add(1)
		if txErr = fn(&Tx{q: p, dialect: Postgres}); txErr == nil {
			if txErr = p.commit(ctx); txErr == nil {
				return nil
			}
		}
		if p.rollback(ctx) != nil || p.conn.IsClosed() {
			return driver.ErrBadConn // the pool drops the connection
		}
		return nil
	})
	if txErr != nil {
		return txErr
	}
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

// pgxRows is pgx's rows as a rowSet; rows read from a batch end it when closed.
type pgxRows struct {
	pgx.Rows
	br pgx.BatchResults
}

// batchRows is one statement's rows of a batch that its sender ends (readAll).
func batchRows(rows pgx.Rows, err error) (rowSet, error) {
	if err != nil {
		return nil, err
	}
	return pgxRows{Rows: rows}, nil
}

func (r pgxRows) Close() error {
	r.Rows.Close()
	err := r.Rows.Err()
	if r.br != nil {
		if cerr := r.br.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
