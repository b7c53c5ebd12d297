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

// TestERR05_SyncRunSpentEgressRefusedBeforeItIsCharged: a synchronous run takes its output's
// first megabyte of egress before it runs, so a key whose egress bucket is spent is refused
// 429 rate_limited (bucket egress) with charged "no" before anything runs or is charged, and a
// client that resends it (fal's retries 429 three times, whatever x-should-retry says) pays
// nothing. A run was charged and then refused its links, and every resend was a new run
// charged again: four charges and no output for one fal.run. A run admitted delivers its
// output whatever the bucket holds by then (Gate.AdmitPaidEgress). Proves ERR-05's advice and
// the charged column (spec 02 "Error body") on the synchronous host.
func TestERR05_SyncRunSpentEgressRefusedBeforeItIsCharged(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		p := plans.Default()
		p.Rates[string(auth.Pro)][ratelimit.Egress] = ratelimit.Rate{Burst: 1, Refill: 1, Period: 24 * time.Hour}
		p.Rates[string(auth.Pro)][ratelimit.Generate] = ratelimit.Rate{Burst: 100, Refill: 100, Period: time.Minute}
		m := newModelsHarnessPlans(t, db, blobs.NewMemory(), func(c *server.Config) { c.NoRateLimits = false }, p)
		run := func() resp {
			return m.call(http.MethodPost, m.sync.URL+"/svc-serverless/image-lite", `{"positivePrompt":"a fox"}`)
		}
		before, jobs := m.balance(), m.countJobs()
		first := run()
		if first.Code != http.StatusOK || m.balance() >= before || m.countJobs() != jobs+1 {
			t.Fatalf("first run (it takes the bucket's one megabyte): %d %s", first.Code, first.Raw)
		}
		if u, _ := first.Body["images"].([]any); len(u) == 0 {
			t.Fatalf("the first run's output carries no image: %s", first.Raw)
		}
		before, jobs = m.balance(), m.countJobs()
		for try := range 4 { // the first answer and three resends
			m.clock.Advance(time.Second) // past the per-instance fuse's second (3 generate requests)
			late := run()
			if late.Code != http.StatusTooManyRequests || late.str("bucket") != "egress" || late.str("charged") != "no" {
				t.Fatalf("run %d on a spent egress bucket: %d %s", try+2, late.Code, late.Raw)
			}
			if late.Header.Get("Retry-After") == "" {
				t.Fatalf("the refusal names no wait: %v", late.Header)
			}
		}
		if m.balance() != before || m.countJobs() != jobs {
			t.Fatalf("refused runs ran or were charged: balance %d→%d, jobs %d→%d", before, m.balance(), jobs, m.countJobs())
		}
	})
}
