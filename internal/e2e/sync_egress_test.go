package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestERR05_SyncRunRefusedEgressSaysItsChargeStands: a synchronous run whose output the egress
// bucket will not let out answers the bucket's refusal, but the run happened and was charged,
// so the answer says charged "stands", retry "poll_first" and x-should-retry: false, and names
// its status and result URLs; it never says "no" and invites a resend that runs and pays again.
// Proves ERR-05's advice and the charged column (spec 02 "Error body") on the synchronous host.
func TestERR05_SyncRunRefusedEgressSaysItsChargeStands(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		p := plans.Default()
		p.Rates[string(auth.Pro)][ratelimit.Egress] = ratelimit.Rate{Burst: 1, Refill: 1, Period: 24 * time.Hour}
		p.Rates[string(auth.Pro)][ratelimit.Generate] = ratelimit.Rate{Burst: 100, Refill: 100, Period: time.Minute}
		m := newModelsHarnessPlans(t, db, blobs.NewMemory(), func(c *server.Config) { c.NoRateLimits = false }, p)
		run := func(key string) resp {
			return m.call(http.MethodPost, m.sync.URL+"/svc-serverless/image-lite", `{"positivePrompt":"a fox"}`, "Idempotency-Key", key)
		}
		if first := run("egress-1"); first.Code != http.StatusOK {
			t.Fatalf("first run (its links take the bucket's one megabyte): %d %s", first.Code, first.Raw)
		}
		before := m.balance()
		late := run("egress-2")
		if late.Code != http.StatusTooManyRequests || late.str("bucket") != "egress" {
			t.Fatalf("second run: %d %s", late.Code, late.Raw)
		}
		if late.str("charged") != "stands" || late.str("retry") != "poll_first" || late.Header.Get("x-should-retry") != "false" ||
			late.str("status_url") == "" || late.str("response_url") == "" {
			t.Fatalf("a run refused its links must say its charge stands and where to read it: %v %s", late.Header, late.Raw)
		}
		if m.balance() >= before {
			t.Fatalf("balance %d, was %d: the second run ran and is charged", m.balance(), before)
		}
	})
}
