package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// Backend names a database kind under test.
type Backend struct {
	Name string
	Open func(t testing.TB) *sqlstore.DB
}

// Backends lists SQLite and PostgreSQL.
func Backends() []Backend {
	return []Backend{{"sqlite", OpenSQLite}, {"postgres", OpenPostgres}}
}

// Each runs f once per backend as a subtest.
func Each(t *testing.T, f func(t *testing.T, db *sqlstore.DB)) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.Open(t)) })
	}
}

// OpenSQLite opens a migrated SQLite database in a temp dir: a copy of MigratedSQLite's file,
// opened as a fresh one is (store.Open, which finds nothing left to apply).
func OpenSQLite(t testing.TB) *sqlstore.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	WriteMigratedSQLite(t, path)
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// migrated is the file of a SQLite database with every migration applied, made once per test
// process: applying the migrations costs most of a test's time under the race detector (modernc's
// SQLite parses each statement in instrumented Go), a copy of the file nothing. The migrations
// themselves are proven from an empty file by sqlstore's migration tests and OpenSQLiteAt.
var migrated struct {
	once sync.Once
	file []byte
	err  error
}

// MigratedSQLite answers the bytes of a closed SQLite database file with every migration
// applied and no rows of its own, the same for every caller.
func MigratedSQLite(t testing.TB) []byte {
	t.Helper()
	migrated.once.Do(func() {
		dir, err := os.MkdirTemp("", "modelexec-storetest-")
		if err != nil {
			migrated.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "template.db")
		db, err := store.Open(context.Background(), path)
		if err != nil {
			migrated.err = err
			return
		}
		// Closing the last connection checkpoints the WAL into the file and removes it.
		if err := db.Close(); err != nil {
			migrated.err = err
			return
		}
		migrated.file, migrated.err = os.ReadFile(path)
	})
	if migrated.err != nil {
		t.Fatalf("migrated SQLite template: %v", migrated.err)
	}
	return migrated.file
}

// WriteMigratedSQLite writes MigratedSQLite's file at path (owner-only, as store.Open makes
// one), for a test that opens the database itself or has a command open it.
func WriteMigratedSQLite(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, MigratedSQLite(t), 0o600); err != nil {
		t.Fatal(err)
	}
}

// OpenSQLiteAt opens a SQLite database in a temp dir with its migrations applied up to version
// only (sqlstore.OpenAt).
func OpenSQLiteAt(t testing.TB, version int64) *sqlstore.DB {
	t.Helper()
	db, err := store.OpenAt(context.Background(), filepath.Join(t.TempDir(), "test.db"), version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenPostgresAt opens a PostgreSQL database in a fresh schema with its migrations applied up
// to version only (sqlstore.OpenAt).
func OpenPostgresAt(t testing.TB, version int64) *sqlstore.DB {
	t.Helper()
	db, err := store.OpenAt(context.Background(), PostgresSchemaDSN(t, nil), version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// PostgresDSN returns the test DSN, skipping (or failing under CI) when unset.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("MODELEXEC_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MODELEXEC_TEST_POSTGRES is unset under CI=true: PostgreSQL tests must run")
		}
		t.Skip("MODELEXEC_TEST_POSTGRES unset: skipping PostgreSQL (set it to postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return dsn
}

// OpenPostgres opens a migrated PostgreSQL database in a fresh schema, dropped at cleanup.
func OpenPostgres(t testing.TB) *sqlstore.DB {
	t.Helper()
	return OpenPostgresWith(t, nil)
}

// OpenPostgresWith is OpenPostgres with params added to the database URL (pool_max_conns…).
func OpenPostgresWith(t testing.TB, params url.Values) *sqlstore.DB {
	t.Helper()
	db, err := store.Open(context.Background(), PostgresSchemaDSN(t, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// PostgresSchemaDSN creates a fresh, empty schema, dropped at cleanup, and answers the test DSN
// with it as the search path and params added.
func PostgresSchemaDSN(t testing.TB, params url.Values) string {
	t.Helper()
	dsn := PostgresDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema (is PostgreSQL up at %s?): %v", dsn, err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		admin.Close()
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}
