package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// Dialect names the database behind a DB.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Conn is one database's connection, given by that database's store (store/sqlite,
// store/postgres): the statements made outside a transaction, the transactions, the
// migrations and the plans. Everything the service stores goes through a DB over one.
type Conn interface {
	Querier
	// InTx runs fn in one transaction, committed when fn returns nil; the store retries it
	// where its database asks for that (a serialization failure, a deadlock, a session the
	// server ended before the transaction took effect).
	InTx(ctx context.Context, fn func(Querier) error) error
	// InOneStatement runs fn, which makes at most one statement, as a transaction of its own.
	InOneStatement(ctx context.Context, fn func(Querier) error) error
	// Dialect names the database.
	Dialect() Dialect
	// Explain answers the plan of q with args, one line per plan node.
	Explain(ctx context.Context, q string, args ...any) ([]string, error)
	// Migrate applies the database's migrations up to version (every one when 0).
	Migrate(ctx context.Context, version int64) error
	// Stats counts what ran so far.
	Stats() Stats
	// SQL is a database/sql handle on the same database, for tests and tools.
	SQL() *sql.DB
	Ping(ctx context.Context) error
	Close() error
}

// Stats counts the statements and transactions run so far (BEGIN and COMMIT not counted as
// statements), the COMMITs the database itself ran (with SQLite's group commit one carries
// several transactions), and the round trips of pipelined transactions (PostgreSQL).
type Stats struct {
	Statements, Transactions, Commits, RoundTrips int64
}

// DB is an open, migrated database.
type DB struct {
	sql Conn
	d   *dialectSQL // the SQL of c's database
}

// New is the store over c.
func New(c Conn) *DB { return &DB{sql: c, d: dialects[c.Dialect()]} }

// Ready is the store over c once step (its migrations, or a check of its schema) succeeded on
// it; c is closed when step failed.
func Ready(c Conn, step func() error) (*DB, error) {
	if err := step(); err != nil {
		c.Close()
		return nil, err
	}
	return New(c), nil
}

// Migrate applies every migration not applied yet.
func (db *DB) Migrate(ctx context.Context) error { return db.sql.Migrate(ctx, 0) }

// Conn is the connection the store runs its statements on.
func (db *DB) Conn() Conn { return db.sql }

// Dialect reports the database kind.
func (db *DB) Dialect() Dialect { return db.d.name }

// SQL is a database/sql handle on the database, for tests and tools.
func (db *DB) SQL() *sql.DB { return db.sql.SQL() }

// Close closes the database.
func (db *DB) Close() error { return db.sql.Close() }

// Ping checks the database answers (readiness).
func (db *DB) Ping(ctx context.Context) error { return db.sql.Ping(ctx) }

// Stats reports the statements and transactions run so far (BEGIN and COMMIT not counted as
// statements).
func (db *DB) Stats() (statements, transactions int64) {
	st := db.sql.Stats()
	return st.Statements, st.Transactions
}

// Commits reports the write transactions run so far on the database itself: with group
// commit on SQLite, one COMMIT carries several of the transactions Stats counts.
func (db *DB) Commits() int64 { return db.sql.Stats().Commits }

// PipelinedRoundTrips reports the round trips pipelined transactions (PostgreSQL) have taken
// so far, BEGIN and COMMIT included.
func (db *DB) PipelinedRoundTrips() int64 { return db.sql.Stats().RoundTrips }

// Querier is where a Tx's statements go: the pool, a database/sql transaction, the SQLite
// committer's connection (group.go) or a pipelined PostgreSQL transaction (pgtx.go).
type Querier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) Row
	// ReadAll runs reads in order, calling row(i, ...) on each row of reads[i]; on PostgreSQL
	// they go together, in one round trip.
	ReadAll(ctx context.Context, reads []Read, row func(i int, row Row) error) error
	// WriteAtCommit runs a write whose only answer is its error, with that error mapped by
	// mapErr (when not nil): at once, or, in a pipelined transaction (PostgreSQL), with the
	// transaction's next statement or its COMMIT, whose error it then is.
	WriteAtCommit(ctx context.Context, q string, args []any, mapErr func(error) error) error
}

// WriteNow is WriteAtCommit for a querier that runs each statement when it is made.
func WriteNow(ctx context.Context, q Querier, sql string, args []any, mapErr func(error) error) error {
	_, err := q.ExecContext(ctx, sql, args...)
	if err != nil && mapErr != nil {
		return mapErr(err)
	}
	return err
}

// read is one statement of a ReadAll.
type Read struct {
	SQL  string
	Args []any
}

// NewRead is the read of sql with args.
func NewRead(sql string, args ...any) Read { return Read{SQL: sql, Args: args} }

// ReadEach is ReadAll for a Querier that sends one statement at a time.
func ReadEach(ctx context.Context, q Querier, reads []Read, row func(i int, row Row) error) error {
	for i, r := range reads {
		if err := eachRow(q.QueryContext(ctx, r.SQL, r.Args...))(func(s Row) error { return row(i, s) }); err != nil {
			return err
		}
	}
	return nil
}

// list is ids as one parameter, as the dialect reads a list.
func (tx *Tx) list(ids []string) any { return tx.sql.list(ids) }

// Rows is the rows a Querier answers: database/sql's, or the pipelined transaction's
// (pgtx.go). A one-row query answers a Row.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Close() error
	Err() error
}

// Tx is one transaction; the domain packages see it through their own Tx ports.
type Tx struct {
	q   Querier
	sql *dialectSQL
}

// InTx runs fn in one transaction, committing when it returns nil.
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	return db.sql.InTx(ctx, func(q Querier) error { return fn(db.tx(q)) })
}

// InOneStatement runs fn, which makes at most one statement, as InTx does; on PostgreSQL
// without a BEGIN and a COMMIT around it: one statement is a transaction of its own, and the
// work takes one round trip instead of three.
func (db *DB) InOneStatement(ctx context.Context, fn func(*Tx) error) error {
	return db.sql.InOneStatement(ctx, func(q Querier) error { return fn(db.tx(q)) })
}

// direct runs outside a transaction.
func (db *DB) direct() *Tx { return db.tx(db.sql) }

// tx is a Tx whose statements go to q.
func (db *DB) tx(q Querier) *Tx { return &Tx{q: q, sql: db.d} }

// forUpdate is the row-lock suffix for a SELECT that precedes an update of the same row.
func (tx *Tx) forUpdate() string { return tx.sql.rowLock }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "SQLSTATE 23505") || strings.Contains(s, "constraint failed: UNIQUE")
}
