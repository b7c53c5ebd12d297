package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// appName is an application_name of its own for a test's sessions: other tests share the
// server, and a test that ends sessions must end only its own.
func appName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Issue 30 item 7: the server ends the pool's sessions (pg_terminate_backend, as an operator or a
// failover does) while they sit in the pool, fresh from use (too fresh for the pool's liveness
// ping): the next reads, writes and transactions run on new connections instead of failing.
func TestStatementsOutliveTerminatedSessions(t *testing.T) {
	app := appName("lost") // this pool's sessions alone: other tests share the server
	db := storetest.OpenPostgresWith(t, url.Values{"application_name": {app}})
	ctx := context.Background()
	storetest.NewAccount(t, db, "acct_lost", auth.Pro, 100)
	use := func(what string) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 24)
		for range 8 { // several at once: several of the pool's connections
			wg.Go(func() {
				if _, err := db.Account(ctx, "acct_lost"); err != nil {
					errs <- err
				}
				if _, err := db.Grant(ctx, "acct_lost", 1, time.Now()); err != nil {
					errs <- err
				}
				if err := db.InTx(ctx, func(tx *sqlstore.Tx) error { return nil }); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%s: %v", what, err)
		}
	}
	use("before")
	var ended int
	if err := db.SQL().QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended == 0 {
		t.Fatal("no session was ended")
	}
	use("after the sessions were ended")
	if sum, err := db.LedgerSum(ctx, "acct_lost"); err != nil || sum != 116 {
		t.Fatalf("ledger after the retries: %d %v, want 116 (each grant once)", sum, err)
	}
}
