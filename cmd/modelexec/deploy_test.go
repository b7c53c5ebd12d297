package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// migratedData answers a new data folder whose database (modelexec.db) already holds every
// migration (storetest's template, made once per test process): serve and the console commands
// find nothing to apply, where applying them costs a second of CPU under the race detector.
// For tests whose point is not a new or an older database; those start from t.TempDir().
func migratedData(t testing.TB) string {
	t.Helper()
	data := t.TempDir()
	storetest.WriteMigratedSQLite(t, filepath.Join(data, "modelexec.db"))
	return data
}

// lowCost is a buildWith edit: the console's sign-in hashes at bcrypt's lowest cost (as
// internal/server's console tests do), where each server would otherwise spend a second of
// race-detector CPU on the hash it compares unknown emails against. serve keeps the default.
func lowCost(cfg *server.Config) { cfg.PasswordCost = bcrypt.MinCost }

// runCLI runs the command line in process, as an operator would, and answers what it printed
// and the error main would print (nil: exit 0).
func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// A command that should have been refused but serves instead stops after a while.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	err = run(ctx, args, func(k string) string { return env[k] }, &out, &errb)
	return out.String(), errb.String(), err
}

// TestMigrateOnPostgresWritesNoDataFolder: a deployment on PostgreSQL keeps nothing in the data
// folder, so migrate (and serve) start where it cannot be made, as under systemd's
// ProtectSystem=strict with no writable working folder.
func TestMigrateOnPostgresWritesNoDataFolder(t *testing.T) {
	dsn := storetest.PostgresSchemaDSN(t, nil)
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-folder")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(blocker, "data") // cannot be made, even by root
	out, _, err := runCLI(t, map[string]string{"MODELEXEC_DATA": data}, "migrate", "--database", dsn)
	if err != nil {
		t.Fatalf("migrate on PostgreSQL with an unwritable data folder: modelexec: %v", err)
	}
	if !strings.Contains(out, "migrations applied") {
		t.Fatalf("migrate printed %q", out)
	}
}
