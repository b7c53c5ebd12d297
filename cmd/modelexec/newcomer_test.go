package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion: --version and the version subcommand print what the binary is.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errb bytes.Buffer
		if err := run(context.Background(), args, func(string) string { return "" }, &out, &errb); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errb.String())
		}
		got := strings.TrimSpace(out.String())
		if !strings.HasPrefix(got, "modelexec ") || !strings.Contains(got, "go1.") {
			t.Errorf("%v printed %q", args, got)
		}
	}
}

// TestVersionNamesReleaseCommit: a release build's version and commit (set at link time by
// scripts/release where the toolchain stamps no commit) are what --version prints.
func TestVersionNamesReleaseCommit(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, func(string) string { return "" }, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "modelexec v1.2.3 0123456789ab ") {
		t.Fatalf("--version printed %q", got)
	}
}

// TestConsoleRefusesMissingDatabase: a console command run where no database is (the
// wrong folder) says so and creates nothing; --create makes the database on purpose.
func TestConsoleRefusesMissingDatabase(t *testing.T) {
	c := &console{t: t, data: filepath.Join(t.TempDir(), "data"), secret: "console-test-secret"}
	_, err := c.run("accounts", "create", "--plan", "pro", "--json")
	if err == nil || !strings.Contains(err.Error(), "no database at") || !strings.Contains(err.Error(), "--create") {
		t.Fatalf("accounts create on a missing database: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.data, "modelexec.db")); !os.IsNotExist(err) {
		t.Fatalf("the refused command created a database: %v", err)
	}
	var a struct{ ID string }
	c.ok(&a, "accounts", "create", "--plan", "pro", "--json", "--create")
	if a.ID == "" {
		t.Fatal("accounts create --create made no account")
	}
	c.ok(nil, "accounts", "create", "--plan", "pro", "--json") // the database exists now
}

// TestDevChecksPortsBeforeMinting: serve --dev with a busy port fails before it makes
// the development account and its one-time key, so no key is shown and lost.
func TestDevChecksPortsBeforeMinting(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := t.TempDir()
	var out, errb bytes.Buffer
	err = run(context.Background(), []string{"serve", "--dev", "--data", data,
		"--api-addr", busy.Addr().String(), "--queue-addr", "127.0.0.1:0", "--sync-addr", "127.0.0.1:0"},
		func(string) string { return "" }, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), busy.Addr().String()) || !strings.Contains(err.Error(), "api address") {
		t.Fatalf("serve --dev on a busy port: %v", err)
	}
	if strings.Contains(out.String(), "API key") {
		t.Fatalf("a key was printed: %s", out.String())
	}
	if _, err := os.Stat(filepath.Join(data, "dev-account")); !os.IsNotExist(err) {
		t.Fatalf("the development account was made: %v", err)
	}
}

// TestDataFolderPrivate: migrate on a fresh data folder makes it 0700 and the database
// 0600; serve's blobs under it are 0700 too (internal/blobs).
func TestDataFolderPrivate(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "--data", data}, func(string) string { return "" }, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{data: 0o700, filepath.Join(data, "modelexec.db"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", filepath.Base(path), got, want)
		}
	}
}
