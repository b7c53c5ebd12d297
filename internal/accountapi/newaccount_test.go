package accountapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestRL13_NewAccountRefusalSaysWhy proves RL-13 from the caller's side: within its first 24
// hours an account runs at a fifth of its plan's limits, and a rate_limited refusal says so and
// until when (the account's creation + 24 h), where nothing else would tell a new account why
// its second submit is refused. An older account's refusal does not mention it.
func TestRL13_NewAccountRefusalSaysWhy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db, "deployment-secret")
		created := t0.Add(-2 * time.Hour)
		if err := db.CreateAccount(context.Background(), auth.Account{ID: "acct_new", Plan: auth.Pro, Status: auth.Live, Balance: 100,
			MonthlyAllowance: auth.DefaultMonthlyAllowance(auth.Pro), AllowancePeriod: storetest.NeverDue, CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
		storetest.NewAccount(t, db, "acct_old", auth.Pro, 100)
		fresh := e.mint(auth.MintParams{AccountID: "acct_new"})
		old := e.mint(auth.MintParams{AccountID: "acct_old"})
		e.pacer.set(func(p *fakePacer) { p.refusal = ratelimit.BucketSpent })

		got := e.do("POST", "/probe/generate", bearer(fresh.Key)...)
		e.refused(got, 429, "rate_limited")
		msg, _ := got.body["message"].(string)
		until := created.Add(24 * time.Hour).Format(time.RFC3339)
		if !strings.Contains(msg, "new account limits until "+until) || !strings.Contains(msg, "first 24 hours") {
			t.Fatalf("new account's refusal does not say why: %q (want until %s)", msg, until)
		}
		if got.body["reason"] != "bucket_spent" || got.header.Get("Retry-After") == "" {
			t.Fatalf("refusal = %s", got.raw)
		}

		got = e.do("POST", "/probe/generate", bearer(old.Key)...)
		e.refused(got, 429, "rate_limited")
		if msg, _ := got.body["message"].(string); strings.Contains(msg, "new") {
			t.Fatalf("an older account's refusal speaks of a new account: %q", msg)
		}
	})
}
