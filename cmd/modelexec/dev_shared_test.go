package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

// watched is a process's stdout: it tells a waiter when what was written contains a text.
type watched struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func newWatched(want string) *watched { return &watched{want: want, seen: make(chan struct{})} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := strings.Contains(w.buf.String(), w.want)
	n, err := w.buf.Write(p)
	if !was && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return n, err
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// serveDev runs `serve --dev` on the shared database dsn with its own data folder and ports
// until the test ends, and returns its stdout once it printed want.
func serveDev(t *testing.T, dsn, want string) (*watched, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, done := newWatched(want), make(chan error, 1)
	var errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--dev", "--data", t.TempDir(), "--database", dsn, "--secret", "shared-dev-secret",
			"--api-addr", "127.0.0.1:0", "--queue-addr", "127.0.0.1:0", "--sync-addr", "127.0.0.1:0", "--drain-delay", "0"},
			func(string) string { return "" }, out, &errb)
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-out.seen:
	case err := <-done:
		done <- err
		t.Fatalf("serve --dev ended: %v\n%s\n%s", err, out.String(), errb.String())
	}
	return out, done
}

// Issue 26 (scale-out): a second `serve --dev` on a shared PostgreSQL database, with a data
// folder of its own, joins the development account the first made instead of failing on its
// console user.
func TestDevJoinsASharedDatabase(t *testing.T) {
	dsn := storetest.PostgresSchemaDSN(t, nil)
	first, _ := serveDev(t, dsn, "Web console")
	second, _ := serveDev(t, dsn, "made by another process")
	account := strings.Fields(strings.TrimPrefix(first.String(), "Development account "))[0]
	if !strings.Contains(second.String(), "Development account "+account+",") || strings.Contains(second.String(), "API key") {
		t.Fatalf("second process printed:\n%s\nwant it to join %s", second.String(), account)
	}
}
