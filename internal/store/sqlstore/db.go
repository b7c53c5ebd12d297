package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver "pgx"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // SQLite driver "sqlite"
)

//go:embed migrations
var migrations embed.FS

// Dialect is the database behind a DB.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DB is an open, migrated database.
type DB struct {
	sql     *conn
	dialect Dialect
}

// Open opens dsn: a postgres:// or postgresql:// URL for PostgreSQL, otherwise a SQLite file
// path (optionally prefixed sqlite:). It applies migrations unless noMigrate.
func Open(ctx context.Context, dsn string) (*DB, error) {
	db, err := open(dsn)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// OpenAt opens dsn with its migrations applied up to version only: a database as an earlier
// release left it, for the tests of a migration. Migrate applies the rest.
func OpenAt(ctx context.Context, dsn string, version int64) (*DB, error) {
	db, err := open(dsn)
	if err != nil {
		return nil, err
	}
	p, err := db.migrations()
	if err == nil {
		_, err = p.UpTo(ctx, version)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: migrate to %d: %w", version, err)
	}
	return db, nil
}

func open(dsn string) (*DB, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		dsn, conns, err := poolSize(dsn)
		if err != nil {
			return nil, err
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(conns)
		db.SetMaxIdleConns(conns)
		db.SetConnMaxIdleTime(5 * time.Minute)
		return &DB{sql: newConn(db, Postgres), dialect: Postgres}, nil
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	// WAL lets readers run beside the one writer; immediate transactions take the write lock
	// up front so two writers queue on busy_timeout instead of deadlocking on an upgrade.
	// No checkpoint on COMMIT: this process checkpoints in the background (checkpoint.go).
	// Temporary files in memory: group commit (group.go) runs each transaction in a
	// SAVEPOINT, whose sub-journal copies every page the transaction first touches; on disk
	// those copies were a quarter of the committer's time, every one a write system call.
	q := "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)&_pragma=temp_store(MEMORY)&_txlock=immediate"
	db, err := sql.Open("sqlite", "file:"+path+q)
	if err != nil {
		return nil, err
	}
	// Idle connections as many as open ones: a connection closed when idle loses its prepared
	// statements and its page cache.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return &DB{sql: newConn(db, SQLite), dialect: SQLite}, nil
}

// Migrate applies the dialect's migrations.
func (db *DB) Migrate(ctx context.Context) error {
	p, err := db.migrations()
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}

// migrations is the goose provider of the dialect's migrations over db.
func (db *DB) migrations() (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations/"+string(db.dialect))
	if err != nil {
		return nil, err
	}
	gd := goose.DialectSQLite3
	if db.dialect == Postgres {
		gd = goose.DialectPostgres
	}
	p, err := goose.NewProvider(gd, db.sql.raw, sub)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	return p, nil
}

// Dialect reports the database kind.
func (db *DB) Dialect() Dialect { return db.dialect }

// SQL exposes the handle for health checks.
func (db *DB) SQL() *sql.DB { return db.sql.raw }

// Close closes the database.
func (db *DB) Close() error { return db.sql.Close() }

// Ping checks the database answers (readiness).
func (db *DB) Ping(ctx context.Context) error { return db.sql.PingContext(ctx) }

// querier is where a Tx's statements go: the pool, a database/sql transaction, the SQLite
// committer's connection (group.go) or a pipelined PostgreSQL transaction (pgtx.go).
type querier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (rowSet, error)
	QueryRowContext(ctx context.Context, q string, args ...any) scanner
	// readAll runs reads in order, calling row(i, ...) on each row of reads[i]; on PostgreSQL
	// they go together, in one round trip.
	readAll(ctx context.Context, reads []read, row func(i int, row scanner) error) error
}

// read is one statement of a readAll.
type read struct {
	sql  string
	args []any
}

func newRead(sql string, args ...any) read { return read{sql: sql, args: args} }

// readEach is readAll for a querier that sends one statement at a time.
func readEach(ctx context.Context, q querier, reads []read, row func(i int, row scanner) error) error {
	for i, r := range reads {
		if err := eachRow(q.QueryContext(ctx, r.sql, r.args...))(func(s scanner) error { return row(i, s) }); err != nil {
			return err
		}
	}
	return nil
}

// list is ids as the dialect's list parameter reads them: an array on PostgreSQL, JSON text
// (json_each) on SQLite.
func (tx *Tx) list(ids []string) any {
	if tx.dialect == Postgres {
		return ids
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// rowSet is the rows a querier answers: database/sql's, or the pipelined transaction's
// (pgtx.go). A one-row query answers a scanner.
type rowSet interface {
	Next() bool
	Scan(dest ...any) error
	Close() error
	Err() error
}

// Tx is one transaction; the domain packages see it through their own Tx ports.
type Tx struct {
	q       querier
	dialect Dialect
}

// InTx runs fn in one transaction, committing when it returns nil. On PostgreSQL a
// serialization failure or deadlock is retried a few times.
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	return retrying(func() error { return db.inTx(ctx, fn) })
}

// retrying runs try again, up to five more times, while it fails retryably.
func retrying(try func() error) error {
	for attempt := 0; ; attempt++ {
		err := try()
		if err != nil && attempt < 5 && retryable(err) {
			continue
		}
		return err
	}
}

func (db *DB) inTx(ctx context.Context, fn func(*Tx) error) error {
	if db.sql.group != nil {
		return db.sql.group.do(ctx, fn)
	}
	tx, release, err := db.sql.begin(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := fn(&Tx{q: txConn{tx: tx, c: db.sql}, dialect: db.dialect}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// InOneStatement runs fn, which makes at most one statement, as InTx does; on PostgreSQL
// without a BEGIN and a COMMIT around it: one statement is a transaction of its own, and the
// work takes one round trip instead of three. A second statement is a programming error and
// panics before it runs. On SQLite it is InTx (the group commit).
func (db *DB) InOneStatement(ctx context.Context, fn func(*Tx) error) error {
	if db.dialect != Postgres {
		return db.InTx(ctx, fn)
	}
	return retrying(func() error { return fn(&Tx{q: &oneStatement{c: db.sql}, dialect: db.dialect}) })
}

// oneStatement is the querier of InOneStatement: the pool, for one statement.
type oneStatement struct {
	c    *conn
	used bool
}

func (o *oneStatement) take() {
	if o.used {
		panic("sqlstore: InOneStatement's function made a second statement")
	}
	o.used = true
}

func (o *oneStatement) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	o.take()
	return o.c.ExecContext(ctx, q, args...)
}

func (o *oneStatement) QueryContext(ctx context.Context, q string, args ...any) (rowSet, error) {
	o.take()
	return o.c.QueryContext(ctx, q, args...)
}

func (o *oneStatement) QueryRowContext(ctx context.Context, q string, args ...any) scanner {
	o.take()
	return o.c.QueryRowContext(ctx, q, args...)
}

func (o *oneStatement) readAll(ctx context.Context, reads []read, row func(int, scanner) error) error {
	if len(reads) > 1 {
		o.take()
	}
	return readEach(ctx, o, reads, row)
}

// retryable reports a PostgreSQL serialization failure or deadlock, wherever it sits in the
// error's chain: a domain error that wraps one (job_record_failed wraps the insert's error)
// is retried too.
func retryable(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "40001" || pg.Code == "40P01"
	}
	return false
}

// direct runs outside a transaction.
func (db *DB) direct() *Tx { return &Tx{q: db.sql, dialect: db.dialect} }

// forUpdate is the row-lock suffix for a SELECT that precedes an update of the same row.
// SQLite needs none: an immediate transaction already holds the write lock.
func (tx *Tx) forUpdate() string {
	if tx.dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

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

// poolSize takes the pool_max_conns parameter (pgxpool's name for it) out of a PostgreSQL URL:
// the most connections this process keeps. Without it the pool holds four per CPU this
// process may use: a statement holds its connection only while it runs, and more
// connections than that left more server sessions competing for the same cores.
func poolSize(dsn string) (string, int, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", 0, fmt.Errorf("sqlstore: database URL: %w", err)
	}
	q := u.Query()
	v := q.Get("pool_max_conns")
	if v == "" {
		return dsn, max(4, 4*runtime.GOMAXPROCS(0)), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("sqlstore: database URL: pool_max_conns %q is not a positive number of connections", v)
	}
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), n, nil
}
