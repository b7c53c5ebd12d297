package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

// The jobs engine's transactions on PostgreSQL, pipelined. A submit is a short transaction of
// a few statements, and each round trip costs both processes a wake-up on top of the
// statement itself. Here a transaction runs on one connection through pgx's own interface,
// which can send several statements at once (database/sql cannot):
//   - BEGIN is not sent alone: it goes with the transaction's first statement;
//   - a write whose only answer is its error (the job's insert, writeAtCommit) waits, and goes
//     with the next statement or with the COMMIT;
//   - a read the transaction is known to make next (readAfter: the keys and the in-flight
//     counts of a batch of submits, after their accounts' locks) goes right after the
//     statement before it, and is answered from what that round trip brought back.
//
// A batch of submits (jobs.Service's submit batcher; a submit alone is a batch of one) thus
// takes two round trips: BEGIN, the accounts' locks, the keys and the in-flight counts; then
// the charges, the inserts and the COMMIT. A waiting write that fails fails the statement it
// went with, or the COMMIT: its error is then the transaction's, as the write's own mapping
// gives it.

// pipeTx is the querier of a pipelined transaction, on a connection held for it.
type pipeTx struct {
	conn    *pgx.Conn
	c       *conn
	begun   bool           // BEGIN was sent
	waiting []waitingWrite // writes not sent yet, in order
	// after are reads to send after the next statement, in its round trip (readAfter); read
	// are those the last round trip carried, each answered once, to a query of the same
	// statement and arguments.
	after []*readAhead
	read  []*readAhead
}

// readAhead is a read sent ahead of its asking, and its answer: its rows as the server sent
// them, decoded when they are scanned.
type readAhead struct {
	sql    string
	args   []any
	fields []pgconn.FieldDescription
	rows   [][][]byte
	err    error
	done   bool
}

// readAfter sends the read sql with args right after the transaction's next statement, in the
// same round trip; the transaction's query of the same statement and arguments is then
// answered from it, without another. As a statement of its own it sees every transaction
// committed before it started, so a read sent after a statement that waited for a row lock
// sees what the lock's holder committed.
func (p *pipeTx) readAfter(sql string, args ...any) {
	p.after = append(p.after, &readAhead{sql: sql, args: args})
}

// readFor takes the read made ahead for q and args, if one was.
func (p *pipeTx) readFor(q string, args []any) (*readAhead, bool) {
	for i, r := range p.read {
		if r.done && r.sql == q && reflect.DeepEqual(r.args, args) {
			p.read = append(p.read[:i], p.read[i+1:]...)
			return r, true
		}
	}
	return nil, false
}

// take reads the answer of r from br, where it comes next.
func (r *readAhead) take(br pgx.BatchResults) {
	rows, err := br.Query()
	if err == nil {
		r.fields = append([]pgconn.FieldDescription(nil), rows.FieldDescriptions()...)
		for rows.Next() {
			raw := rows.RawValues()
			row := make([][]byte, len(raw))
			for i, v := range raw {
				if v != nil {
					row[i] = append([]byte{}, v...)
				}
			}
			r.rows = append(r.rows, row)
		}
		rows.Close()
		err = rows.Err()
	}
	r.err, r.done = err, true
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

// ahead reports whether statements must go with the next one (BEGIN, waiting writes, reads to
// make after it).
func (p *pipeTx) ahead() bool { return !p.begun || len(p.waiting) > 0 || len(p.after) > 0 }

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
	p.read = p.after
	for _, r := range p.after {
		b.Queue(r.sql, r.args...)
	}
	p.after = nil
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
	for _, a := range p.read {
		a.take(br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return driver.RowsAffected(tag.RowsAffected()), err
}

func (p *pipeTx) QueryRowContext(ctx context.Context, q string, args ...any) scanner {
	p.c.statements.Add(1)
	if r, ok := p.readFor(q, args); ok {
		return readRow{r, p.conn.TypeMap()}
	}
	if !p.ahead() {
		p.c.pipeTrips.Add(1)
		return p.conn.QueryRow(ctx, q, args...)
	}
	br, err := p.sendAhead(ctx, func(b *pgx.Batch) { b.Queue(q, args...) })
	if err != nil {
		return errRow{err}
	}
	return batchRow{br: br, after: p.read}
}

func (p *pipeTx) QueryContext(ctx context.Context, q string, args ...any) (rowSet, error) {
	p.c.statements.Add(1)
	if r, ok := p.readFor(q, args); ok {
		return &readRows{r: r, tm: p.conn.TypeMap()}, nil
	}
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
	return pgxRows{Rows: r, br: br, after: p.read}, nil
}

// commit sends COMMIT with whatever is still waiting; a transaction that sent nothing commits
// nothing.
func (p *pipeTx) commit(ctx context.Context) error {
	p.after = nil // nothing reads after the COMMIT
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

// batchRow is a one-row result read from a batch: scanning it reads the row, then the reads
// sent after it (if any), and ends the batch.
type batchRow struct {
	br    pgx.BatchResults
	after []*readAhead
}

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	for _, a := range r.after {
		a.take(r.br)
	}
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// readRows answers a read made ahead (readAfter), its rows decoded as they are scanned.
type readRows struct {
	r  *readAhead
	tm *pgtype.Map
	i  int
}

func (rs *readRows) Next() bool {
	if rs.r.err != nil || rs.i >= len(rs.r.rows) {
		return false
	}
	rs.i++
	return true
}

func (rs *readRows) Scan(dest ...any) error {
	if rs.i == 0 {
		return fmt.Errorf("sqlstore: Scan called before Next")
	}
	return pgx.ScanRow(rs.tm, rs.r.fields, rs.r.rows[rs.i-1], dest...)
}

func (rs *readRows) Close() error { return nil }
func (rs *readRows) Err() error   { return rs.r.err }

// readRow is the first row of a read made ahead.
type readRow struct {
	r  *readAhead
	tm *pgtype.Map
}

func (r readRow) Scan(dest ...any) error {
	rs := &readRows{r: r.r, tm: r.tm}
	if !rs.Next() {
		if err := rs.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	return rs.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// pgxRows is pgx's rows as a rowSet; rows read from a batch end it when closed, after reading
// the reads sent after them.
type pgxRows struct {
	pgx.Rows
	br    pgx.BatchResults
	after []*readAhead
}

func (r pgxRows) Close() error {
	r.Rows.Close()
	if r.br != nil {
		err := r.Rows.Err()
		for _, a := range r.after {
			a.take(r.br)
		}
		if cerr := r.br.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return r.Rows.Err()
}
