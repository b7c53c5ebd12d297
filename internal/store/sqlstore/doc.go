// Package sqlstore implements every store port of the domain packages (auth, ledger, jobs, ...)
// as SQL statements, written once for both databases: queries use $N placeholders, times are
// Unix microseconds (BIGINT) and booleans integers, so most statements are the same on each.
// Where the two need different SQL (row locks, lists of ids, statements that do in one what
// the other does in several) the DB's Dialect says which.
//
// The statements run on a Conn that each database's own store gives: internal/store/sqlite
// (database/sql over modernc.org/sqlite, group commit, background checkpoints) and
// internal/store/postgres (pgx directly: a pgxpool, pipelined transactions, LISTEN/NOTIFY).
// internal/store opens the one a data source names. Each owns its migrations.
//
// The store conformance suite in internal/store/storetest runs against both.
package sqlstore
