package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// serveDevIn runs `serve --dev` with the data folder data and the database dsn until it says
// which development account it runs with, stops it, and returns what it printed.
func serveDevIn(t *testing.T, data, dsn string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, done := newWatched("Development account"), make(chan error, 1)
	var errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--dev", "--data", data, "--database", dsn,
			"--api-addr", "127.0.0.1:0", "--queue-addr", "127.0.0.1:0", "--sync-addr", "127.0.0.1:0", "--drain-delay", "0"},
			func(string) string { return "" }, out, &errb)
	}()
	select {
	case <-out.seen:
		cancel()
		<-done
	case err := <-done:
		cancel()
		t.Fatalf("serve --dev ended: %v\n%s\n%s", err, out.String(), errb.String())
	}
	return out.String()
}

// TestDevMarkerOnANewDatabase: `serve --dev` whose data folder remembers a development account
// the database does not hold (another --database, or the SQLite file deleted) makes the account
// again and prints a fresh key, instead of naming an account that `keys mint` then says does not
// exist; the account it names is one a key can be minted for.
func TestDevMarkerOnANewDatabase(t *testing.T) {
	data := t.TempDir()
	serveDevIn(t, data, filepath.Join(t.TempDir(), "first.db"))
	second := filepath.Join(t.TempDir(), "second.db")
	out := serveDevIn(t, data, second)
	if !strings.Contains(out, "API key (shown once)") {
		t.Fatalf("serve --dev on a new database, with the marker of another in its data folder, printed:\n%s", out)
	}
	account := strings.Fields(strings.TrimPrefix(out, "Development account "))[0]
	if _, _, err := runCLI(t, nil, "keys", "mint", "--account", account, "--data", data, "--database", second); err != nil {
		t.Fatalf("keys mint for the development account %s serve --dev printed: %v", account, err)
	}
}
