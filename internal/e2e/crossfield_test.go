package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

// TestINSHARED43_CrossFieldRulesOverHTTP: a request breaking a cross-field rule (width without
// height) before the catalogue's enforcement date is accepted, run and charged as usual, and
// answered with the Deprecation signal (`Deprecation: @<unix>` and `Sunset`) and a warning in
// the body, on the queue and the synchronous host alike. From the enforcement date on, the
// same request is refused 422 invalid_input at the field, before any charge.
// Proves IN-SHARED-43 (spec 02 Versioning 3) end to end.
func TestINSHARED43_CrossFieldRulesOverHTTP(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		m, ok := h.cat.Model(mFast)
		if !ok {
			t.Fatal("no test model")
		}
		enforce := m.EnforcementDate()
		now := h.clock.Now()
		if !now.Before(enforce) {
			t.Skipf("the machine clock (%s) is past the catalogue's enforcement date (%s)", now, enforce)
		}
		const body = `{"positivePrompt":"ok","width":1024}`
		wantDeprecation := fmt.Sprintf("@%d", enforce.Unix())
		before := h.balance()
		for _, url := range []string{h.queue.URL + "/svc-serverless/" + mFast + "?wait=10", h.sync.URL + "/svc-serverless/" + mFast} {
			r := h.call(http.MethodPost, url, body)
			if r.Code != http.StatusOK {
				t.Fatalf("%s before enforcement: %d %s", url, r.Code, r.Raw)
			}
			if got := r.Header.Get("Deprecation"); got != wantDeprecation {
				t.Errorf("%s: Deprecation = %q, want %q", url, got, wantDeprecation)
			}
			if got := r.Header.Get("Sunset"); got != enforce.UTC().Format(http.TimeFormat) {
				t.Errorf("%s: Sunset = %q", url, got)
			}
			ws, _ := r.Body["warnings"].([]any)
			if len(ws) == 0 || !strings.Contains(r.Raw, "height") {
				t.Errorf("%s: answer without a warning naming the rule: %s", url, r.Raw)
			}
		}
		if h.balance() >= before {
			t.Fatalf("the warned requests ran uncharged: balance %d, before %d", h.balance(), before)
		}

		// The enforcement date passes. A key minted then (the first one would have expired).
		h.clock.Advance(enforce.Sub(now) + time.Hour)
		mint, err := h.auth.Mint(context.Background(), auth.MintParams{AccountID: h.account})
		if err != nil {
			t.Fatal(err)
		}
		at, n := h.balance(), h.countJobs()
		r := h.callKey(mint.Key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast+"?wait=10", body)
		if r.Code != 422 || r.str("error") != "invalid_input" || !strings.Contains(r.Raw, `"height"`) || r.Header.Get("Deprecation") != "" {
			t.Fatalf("after enforcement: %d %s (Deprecation %q)", r.Code, r.Raw, r.Header.Get("Deprecation"))
		}
		if h.balance() != at || h.countJobs() != n {
			t.Fatalf("the refused request changed the books: balance %d→%d, jobs %d→%d", at, h.balance(), n, h.countJobs())
		}
	})
}
