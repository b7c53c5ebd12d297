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

// TestSUB25_UnreadableQueryIsRefused: a query Go's URL.Query cannot read (a malformed
// %-escape, a ';') was dropped pair by pair without a word, so the job ran and was charged
// without its webhook or wait; it is refused 422 under the code of the parameter that does
// not parse, naming it in detail, before any charge, on the queue host's submit and status
// read and on the synchronous host. A single-valued option sent twice with different values
// is conflicting_options, not the first silently taken. Proves SUB-25, SUB-24, SUB-05, SUB-08.
func TestSUB25_UnreadableQueryIsRefused(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		ok := `{"positivePrompt":"ok"}`
		for _, c := range []struct{ query, code, name string }{
			{"webhook=https://example.com/hook%zz", "invalid_url", "webhook"},
			{"webhook=https://example.com/hook;x", "invalid_url", "webhook"},
			{"alt_webhook=https://example.com/hook%2", "invalid_url", "alt_webhook"},
			{"wait=5;", "invalid_wait", "wait"},
			{"wait=5%", "invalid_wait", "wait"},
			{"logs=1;x=y", "invalid_input", "logs"},
			{"logs=1&note=%zz", "invalid_input", "note"},
			{"webhook=https://a.example.com/h&webhook=https://b.example.com/h", "conflicting_options", "webhook"},
			{"wait=5&wait=6", "conflicting_options", "wait"},
		} {
			r := h.submit(mFast, c.query, ok)
			if r.Code != http.StatusUnprocessableEntity || r.str("error") != c.code || r.str("charged") != "no" {
				t.Errorf("%s: %d %s, want 422 %s", c.query, r.Code, r.Raw, c.code)
				continue
			}
			if loc := detailLoc(r); loc != "query/"+c.name {
				t.Errorf("%s: detail loc %s, want query/%s", c.query, loc, c.name)
			}
		}
		if r := h.call(http.MethodPost, h.sync.URL+"/svc-serverless/"+mFast+"?wait=5;", ok); r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_wait" {
			t.Errorf("synchronous host: %d %s", r.Code, r.Raw)
		}
		if h.balance() != before || h.countJobs() != 0 {
			t.Fatalf("a refused query was charged or ran: balance %d (was %d), %d jobs", h.balance(), before, h.countJobs())
		}
		// The status read refuses an unreadable logs option too; a repeat that agrees is read.
		r := h.submit(mFast, "logs=1&logs=1", ok)
		if r.Code != http.StatusOK {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		if st := h.call(http.MethodGet, r.str("status_url")+"?logs=1;x=y", ""); st.Code != http.StatusUnprocessableEntity || st.str("error") != "invalid_input" || detailLoc(st) != "query/logs" {
			t.Errorf("status read: %d %s", st.Code, st.Raw)
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
