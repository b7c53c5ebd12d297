package jobs_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// A queued job's position read for a caller that went away (a status stream or a held submit
// whose client hung up) is not logged: the store did not fail. A read that fails while its
// caller still waits is logged as a warning.
func TestQueuePositionLogsOnlyFailures(t *testing.T) {
	db := storetest.OpenSQLite(t)
	now := func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	cat := queueCatalog(t)
	js := jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, now), Catalog: cat, Runners: runners.Registry{},
		Env: func(jobs.Job, runners.Reporter) runners.Env { return runners.Env{} }, Seats: jobs.NewSeats(8, 8, 8), Now: now, Log: log},
		jobs.DefaultConfig())
	storetest.NewAccount(t, db, "acct_q", auth.Pro, 1000)
	queued := jobs.Job{AccountID: "acct_q", Model: "image-4b", Status: jobs.InQueue, Priority: jobs.Normal, CreatedAt: now()}

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	js.QueuePosition(gone, queued)
	if logged.Len() != 0 {
		t.Fatalf("a caller gone away was logged: %s", logged.String())
	}

	db.Close()
	js.QueuePosition(context.Background(), queued)
	if !strings.Contains(logged.String(), "queue position") || !strings.Contains(logged.String(), "level=WARN") {
		t.Fatalf("a failed read for a waiting caller was not logged: %q", logged.String())
	}
}
