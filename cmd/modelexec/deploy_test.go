package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

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
