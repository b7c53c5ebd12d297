package jobs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// addHistory writes n settled jobs of the engine's account straight into the jobs table (one
// transaction): the past a long-lived account accumulates. No credits move.
func addHistory(tb testing.TB, db *sqlstore.DB, account, keyID string, n int) {
	tb.Helper()
	tx, err := db.SQL().Begin()
	if err != nil {
		tb.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO jobs (account_id, id, key_id, request_id, model, product, idem_key, input, status, outcome, quoted, reserved, charged, created_at, finished_at)
 VALUES ($1, $2, $3, $4, 'image-4b', 'photo', $5, '{}', 'COMPLETED', 'succeeded', 10, 10, 10, $6, $6)`)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("hist%08d", i)
		if _, err := st.Exec(account, "photo_"+id, keyID, "req-"+id, id, int64(1_700_000_000_000_000+i)); err != nil {
			tb.Fatal(err)
		}
	}
	st.Close()
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkSubmitHistory measures one job from submit to settled on SQLite for an account with
// no history and with 100,000 settled jobs behind it: the cost must not grow with the past.
func BenchmarkSubmitHistory(b *testing.B) {
	for _, rows := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("history=%d", rows), func(b *testing.B) {
			e := newEngineTB(b, storetest.OpenSQLite(b))
			addHistory(b, e.db, e.p.Account.ID, e.p.Key.ID, rows)
			m, _ := e.cat.Model("image-4b")
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if _, err := e.js.Submit(ctx, jobs.SubmitRequest{Principal: e.p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)}); err != nil {
					b.Fatal(err)
				}
				e.js.Drain()
			}
		})
	}
}
