package e2e_test

import (
	"net/http"
	"testing"
)

// TestSUB08_WebhookNotUTF8IsRefused: a per-request webhook whose decoded bytes are not UTF-8
// (?webhook=https://example.com/%FF, an encoded surrogate), under any spelling, is refused
// 422 invalid_url naming the spelling sent, before any charge, on both databases; on
// PostgreSQL the job's record refused the bytes and the submit answered 500
// job_record_failed "retry with the same key" forever. Proves SUB-08 and ERR-66.
func TestSUB08_WebhookNotUTF8IsRefused(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		for _, c := range []struct{ query, name string }{
			{"webhook=https://example.com/%FF", "webhook"},
			{"webhook=https://example.com/%ED%A0%80", "webhook"},
			{"alt_webhook=https://example.com/h%FF", "alt_webhook"},
			{"fal_webhook=https://example.com/%C3", "fal_webhook"},
		} {
			r := h.submit(mFast, c.query, `{"positivePrompt":"ok"}`, "Idempotency-Key", "k1")
			if r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_url" || r.str("reason") != "not_utf8" || r.str("charged") != "no" {
				t.Errorf("%s: %d %s", c.query, r.Code, r.Raw)
				continue
			}
			if loc := detailLoc(r); loc != "query/"+c.name {
				t.Errorf("%s: detail loc %s, want query/%s", c.query, loc, c.name)
			}
		}
		if h.balance() != before || h.countJobs() != 0 {
			t.Errorf("a refused webhook was charged or ran: balance %d (was %d), %d jobs", h.balance(), before, h.countJobs())
		}
	})
}

// detailLoc is the first detail entry's loc joined with "/".
func detailLoc(r resp) string {
	d, _ := r.Body["detail"].([]any)
	if len(d) == 0 {
		return ""
	}
	m, _ := d[0].(map[string]any)
	loc, _ := m["loc"].([]any)
	s := ""
	for i, p := range loc {
		if i > 0 {
			s += "/"
		}
		if v, ok := p.(string); ok {
			s += v
		}
	}
	return s
}
