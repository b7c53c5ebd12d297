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

// TestSUB24_RepeatedHeaderLinesAgree: an option header sent on two lines with different values
// (two Idempotency-Key lines, two X-Svc-Priority, two X-Svc-Request-Timeout) was read from its
// first line alone, so the second key was dropped and the same request resent with it alone
// was charged again; the lines are one value to HTTP, and values that differ are refused 422
// conflicting_options naming the header, before any charge, on the queue and synchronous
// hosts. Lines that agree are one request. Proves SUB-24.
func TestSUB24_RepeatedHeaderLinesAgree(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		ok := `{"positivePrompt":"ok"}`
		for _, hdr := range [][]string{
			{"Idempotency-Key", "first-x", "Idempotency-Key", "second-x"},
			{"X-Svc-Priority", "low", "X-Svc-Priority", "normal"},
			{"X-Svc-Request-Timeout", "10", "X-Svc-Request-Timeout", "0"},
			{"X-Svc-Covered-Only", "1", "X-Svc-Covered-Only", "0"},
		} {
			for host, u := range map[string]string{"queue": h.queue.URL, "sync": h.sync.URL} {
				r := h.call(http.MethodPost, u+"/svc-serverless/"+mFast, ok, hdr...)
				if r.Code != http.StatusUnprocessableEntity || r.str("error") != "conflicting_options" || r.str("option") != hdr[0] || r.str("charged") != "no" {
					t.Errorf("%s %v: %d %s, want 422 conflicting_options", host, hdr, r.Code, r.Raw)
					continue
				}
				if loc := detailLoc(r); loc != "header/"+hdr[0] {
					t.Errorf("%s %v: detail loc %s", host, hdr, loc)
				}
			}
		}
		if h.balance() != before || h.countJobs() != 0 {
			t.Fatalf("a refused header was charged or ran: balance %d (was %d), %d jobs", h.balance(), before, h.countJobs())
		}
		a := h.submit(mFast, "", ok, "Idempotency-Key", "same-x", "Idempotency-Key", "same-x")
		b := h.submit(mFast, "", ok, "Idempotency-Key", "same-x")
		if a.Code != http.StatusOK || b.Code != http.StatusOK || b.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("lines that agree: %d %s, then %d %s (replayed %q)", a.Code, a.Raw, b.Code, b.Raw, b.Header.Get("Idempotent-Replayed"))
		}
	})
}

// TestINSHARED06_NULNamedInDetail: a NUL character in a field is refused 422 invalid_body on
// the queue host with the field in param and in detail's loc, as every other field refusal
// names it (it was loc [body]).
func TestINSHARED06_NULNamedInDetail(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"ok","lora":[{"model":"x\u0000"}]}`)
		if r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_body" || r.str("param") != "lora[0].model" {
			t.Fatalf("%d %s", r.Code, r.Raw)
		}
		if loc := detailLoc(r); loc != "body/lora/0/model" {
			t.Errorf("detail loc %s, want body/lora/0/model: %s", loc, r.Raw)
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
