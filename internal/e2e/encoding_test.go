package e2e_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"
)

// TestERR60_CompressedBodyIsRefusedByName: a body sent with Content-Encoding (gzip, br) was
// read as broken JSON ("The body is not valid JSON"), and a plain body labelled gzip was taken.
// Both are refused invalid_body (422 on the model hosts) naming the encoding and what to do,
// before any charge, on the queue and synchronous hosts. Nothing is inflated: a few bytes
// sent would otherwise hold the server to a whole body's memory. identity is a plain body.
func TestERR60_CompressedBodyIsRefusedByName(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		zw.Write([]byte(`{"positivePrompt":"ok"}`))
		zw.Close()
		for _, c := range []struct{ body, encoding string }{
			{zipped.String(), "gzip"},
			{`{"positivePrompt":"ok"}`, "gzip"},
			{`{"positivePrompt":"ok"}`, "br"},
		} {
			for _, u := range []string{h.queue.URL + "/svc-serverless/" + mFast, h.sync.URL + "/svc-serverless/" + mFast} {
				r := h.call(http.MethodPost, u, c.body, "Content-Encoding", c.encoding)
				if r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_body" || !strings.Contains(r.str("message"), `Content-Encoding "`+c.encoding+`"`) || r.str("charged") != "no" {
					t.Errorf("%s with Content-Encoding %s: %d %s", u, c.encoding, r.Code, r.Raw)
				}
			}
		}
		if h.balance() != before || h.countJobs() != 0 {
			t.Fatalf("a refused body was charged or ran: balance %d (was %d), %d jobs", h.balance(), before, h.countJobs())
		}
		if r := h.submit(mFast, "", `{"positivePrompt":"ok"}`, "Content-Encoding", "identity"); r.Code != http.StatusOK {
			t.Fatalf("Content-Encoding identity: %d %s", r.Code, r.Raw)
		}
	})
}
