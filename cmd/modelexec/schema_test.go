package main

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// tableCount counts the tables in the schema the test DSN's search_path names.
func tableCount(t *testing.T, dsn string) int {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, u.Query().Get("search_path")).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConsoleNeverMigratesPostgres: a console command pointed at a PostgreSQL database with no
// modelexec schema refuses it, saying to run migrate, and leaves it empty; on a schema at an
// older version it refuses too and leaves the version as it was. Only migrate and serve migrate.
func TestConsoleNeverMigratesPostgres(t *testing.T) {
	dsn := storetest.PostgresSchemaDSN(t, nil)
	data := t.TempDir()
	for _, args := range [][]string{
		{"accounts", "show", "acct_x"},
		{"keys", "list", "--account", "acct_x"},
		{"users", "list", "--account", "acct_x"},
		{"credits", "grant", "acct_x", "5"},
	} {
		_, _, err := runCLI(t, nil, append(args, "--data", data, "--database", dsn)...)
		if err == nil || !strings.Contains(err.Error(), "has no modelexec schema (run modelexec migrate first)") {
			t.Fatalf("%v on an empty database: modelexec: %v", args, err)
		}
		if n := tableCount(t, dsn); n != 0 {
			t.Fatalf("%v on an empty database left %d tables", args, n)
		}
	}

	old := storetest.PostgresSchemaDSN(t, nil)
	db, err := store.OpenAt(context.Background(), old, 110)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, _, err = runCLI(t, nil, "accounts", "show", "acct_x", "--data", data, "--database", old)
	if err == nil || !strings.Contains(err.Error(), "the schema is at version 110 and this binary needs") ||
		!strings.Contains(err.Error(), "run modelexec migrate") {
		t.Fatalf("accounts show on a schema at version 110: modelexec: %v", err)
	}
	if _, _, err := runCLI(t, nil, "migrate", "--data", data, "--database", old); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if _, _, err := runCLI(t, nil, "accounts", "create", "--data", data, "--database", old); err != nil {
		t.Fatalf("accounts create after migrate: %v", err)
	}
}

// TestConsoleNeverMigratesSQLite: the same for a SQLite file at an older version; --create on
// a new file still makes the schema.
func TestConsoleNeverMigratesSQLite(t *testing.T) {
	data := t.TempDir()
	path := filepath.Join(data, "modelexec.db")
	db, err := store.OpenAt(context.Background(), path, 110)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, _, err = runCLI(t, nil, "accounts", "create", "--data", data)
	if err == nil || !strings.Contains(err.Error(), "the schema is at version 110 and this binary needs") {
		t.Fatalf("accounts create on a SQLite file at version 110: modelexec: %v", err)
	}
	fresh := t.TempDir()
	if _, _, err := runCLI(t, nil, "accounts", "create", "--data", fresh, "--create"); err != nil {
		t.Fatalf("accounts create --create on a new SQLite file: %v", err)
	}
	if _, _, err := runCLI(t, nil, "accounts", "create", "--data", fresh); err != nil {
		t.Fatalf("accounts create on the database --create made: %v", err)
	}
}

// TestServeAndMigrateRefuseANewerSchema: on a database a newer binary migrated, migrate and
// serve refuse with the console's message (README "Keys and accounts") instead of reporting
// "migrations applied" or serving on tables they do not understand. Both databases.
func TestServeAndMigrateRefuseANewerSchema(t *testing.T) {
	data := t.TempDir()
	dsns := map[string]string{"sqlite": filepath.Join(data, "modelexec.db")}
	if os.Getenv("MODELEXEC_TEST_POSTGRES") != "" {
		dsns["postgres"] = storetest.PostgresSchemaDSN(t, nil)
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			db, err := store.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.SQL().Exec(`INSERT INTO goose_db_version (version_id, is_applied, tstamp) VALUES (170, true, CURRENT_TIMESTAMP)`); err != nil {
				t.Fatal(err)
			}
			db.Close()
			for _, args := range [][]string{
				{"migrate"},
				{"serve", "--dev", "--api-addr", "127.0.0.1:0", "--queue-addr", "127.0.0.1:0", "--sync-addr", "127.0.0.1:0"},
				{"accounts", "show", "acct_x"},
			} {
				_, _, err := runCLI(t, nil, append(args, "--data", data, "--database", dsn)...)
				if err == nil || !strings.Contains(err.Error(), "the schema is at version 170, newer than this binary's") {
					t.Fatalf("%v on a schema at version 170: modelexec: %v", args, err)
				}
			}
		})
	}
}
