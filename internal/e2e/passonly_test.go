package e2e_test

import (
	"context"
	"testing"

	"github.com/modelexec/modelexec/internal/ledger"
)

// TestSUB22_PassOnlyPlan: on a pass-only plan a job runs only when a pass or promotion pays:
// no pass takes the model → 403 model_not_in_plan; a pass takes it but not this shape →
// 409 pass_does_not_cover; both before anything is held or charged. Proves SUB-22, JOB-13.
func TestSUB22_PassOnlyPlan(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		if err := h.db.SetAccountPassOnly(ctx, h.account, true); err != nil {
			t.Fatal(err)
		}
		before := h.balance()
		r := h.submit(mFast, "", `{"positivePrompt":"ok"}`)
		expectRefusal(t, h, r, 403, "model_not_in_plan", before, 0)
		if err := h.db.AddPass(ctx, ledger.Pass{ID: "pass_other", AccountID: h.account, Name: "music", Models: []string{"music-turbo"}, UsesLeft: -1}); err != nil {
			t.Fatal(err)
		}
		r = h.submit(mFast, "", `{"positivePrompt":"ok"}`, "X-Svc-Covered-Only", "1")
		expectRefusal(t, h, r, 403, "model_not_in_plan", before, 0)
		// A pass that takes the model but only quotes up to 1 credit (the quote is 11).
		if err := h.db.AddPass(ctx, ledger.Pass{ID: "pass_small", AccountID: h.account, Name: "small", Models: []string{mFast}, MaxCredits: 1, UsesLeft: -1}); err != nil {
			t.Fatal(err)
		}
		r = h.submit(mFast, "", `{"positivePrompt":"ok"}`)
		expectRefusal(t, h, r, 409, "pass_does_not_cover", before, 0)
		if r.str("pass") != "small" || r.str("why") != "shape" {
			t.Fatalf("pass_does_not_cover fields: %s", r.Raw)
		}
		if err := h.db.AddPass(ctx, ledger.Pass{ID: "pass_any", AccountID: h.account, Name: "studio", Models: []string{mFast}, UsesLeft: -1}); err != nil {
			t.Fatal(err)
		}
		// A pass that takes the model at any shape pays: the job runs free.
		r = h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		cov, _ := r.Body["coverage"].(map[string]any)
		if r.Code != 200 || cov["by"] != "pass" || r.num("credits_charged") != 0 || h.balance() != before {
			t.Fatalf("covered on a pass-only plan: %d %s", r.Code, r.Raw)
		}
	})
}
