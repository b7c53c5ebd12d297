package e2e_test

import (
	"strings"
	"testing"
)

// TestJOB28_KeyScopedToAccount: an idempotency key belongs to the account (DESIGN 25/31): the
// same key sent to three products makes one job and one charge; the two later requests answer
// the first job (the first request's id, fresh, not built from the key: DESIGN 37) with replayed true and the
// header Idempotent-Replayed: true, whatever product or body they name.
func TestJOB28_KeyScopedToAccount(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before, jobsBefore := h.balance(), h.countJobs()
		first := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`, "Idempotency-Key", "same-1")
		if first.Code != 200 || first.Body["replayed"] != false || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %v %s", first.Code, first.Header, first.Raw)
		}
		q := first.num("credits_quoted")
		for _, slug := range []string{"music-turbo", "image-9b-kv"} {
			r := h.submit(slug, "", `{"prompt":"something else entirely"}`, "Idempotency-Key", "same-1")
			if r.Code != 200 || r.Body["replayed"] != true || r.str("request_id") != first.str("request_id") || r.num("credits_charged") != 0 {
				t.Fatalf("%s with the same key: %d %s", slug, r.Code, r.Raw)
			}
			if r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s replay without Idempotent-Replayed: true (%v)", slug, r.Header)
			}
		}
		if h.balance() != before-q || h.countJobs() != jobsBefore+1 {
			t.Fatalf("balance %d jobs %d: want %d and %d (one charge, one job)", h.balance(), h.countJobs(), before-q, jobsBefore+1)
		}
		if j := h.job(first.str("request_id")); !strings.HasPrefix(j.ID, "photo_") || strings.Contains(j.ID, "same-1") {
			t.Fatalf("job id %q, want a fresh photo_ id", j.ID)
		}
	})
}
