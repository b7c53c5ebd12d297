package postgres_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestListenReturnsWhenItsSessionEnds: when the server ends the listening session (a restart,
// a failover, pg_terminate_backend), Listen returns its error, so that its caller listens
// again; it used to wait for ever on its own sender, and notices between processes stopped
// until the process was restarted, with nothing in the log.
func TestListenReturnsWhenItsSessionEnds(t *testing.T) {
	app := appName("listen")
	db := storetest.OpenPostgresWith(t, url.Values{"application_name": {app}})
	n, err := postgres.NewNotifier(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.Listen(ctx, func(jobs.Notice) {}) }()
	listening := func() int {
		var c int
		if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
 WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	deadline := time.Now().Add(10 * time.Second)
	for listening() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no session listens")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := db.SQL().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Listen returned no error for a lost session")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not return after its session ended")
	}
}
