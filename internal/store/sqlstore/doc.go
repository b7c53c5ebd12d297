// Package sqlstore implements every store port of the domain packages (auth, ledger, jobs, ...)
// on database/sql, for SQLite (modernc.org/sqlite, WAL, the embedded default) and PostgreSQL
// (pgx). One implementation serves both: queries use $N placeholders, which both drivers bind
// by number; times are stored as Unix microseconds (BIGINT) and booleans as integers so the SQL
// is the same. Each dialect has its own goose migrations. Where the two need different SQL (row
// locks, identity columns) the Dialect says so.
//
// The store conformance suite in internal/store/storetest runs against both.
package sqlstore
