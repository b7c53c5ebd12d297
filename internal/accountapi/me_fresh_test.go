package accountapi_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestACC01_MeReadsBalanceFresh proves ACC-01 (GET /v1/me returns the account record) right
// after a charge: the key cache may answer whether the key is valid, but the balance and the
// key's spend are read fresh, so a read within the cache's lifetime shows the charge.
func TestACC01_MeReadsBalanceFresh(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_me_fresh")
		a := e.get("/v1/me", key) // fills the key cache
		e.want(a, 200, "")
		credits := a.body["credits"].(map[string]any)
		if num(credits["balance"]) != 10000 {
			t.Fatalf("balance before = %s", a.raw)
		}
		j := e.settle(e.submit(key, "image-lite", `{"positivePrompt":"a charge"}`, "me1"))
		if j.Charged <= 0 {
			t.Fatalf("job not charged: %+v", j)
		}
		// Same instant on the injected clock: the cached principal is still "fresh" for key checks.
		a = e.get("/v1/me", key)
		e.want(a, 200, "")
		credits = a.body["credits"].(map[string]any)
		if got := num(credits["balance"]); got != 10000-j.Charged {
			t.Fatalf("balance after a charge of %d = %d, want %d: %s", j.Charged, got, 10000-j.Charged, a.raw)
		}
		k := a.body["key"].(map[string]any)
		if got := num(k["credits_spent_period"]); got != j.Charged {
			t.Fatalf("credits_spent_period = %d, want %d: %s", got, j.Charged, a.raw)
		}
	})
}
