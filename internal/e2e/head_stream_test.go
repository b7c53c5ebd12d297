package e2e_test

import (
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/plans"
)

// TestREAD05_HeadStreamHoldsNoSeat: a HEAD on a status stream answers the stream's headers
// (200, text/event-stream) after the same checks as GET and returns at once: it takes no seat
// (none is free here, where a GET is 503 stream_declined) and does not wait for the running
// job, so a status read sent next on the same connection is answered. Proves READ-04, READ-05.
func TestREAD05_HeadStreamHoldsNoSeat(t *testing.T) {
	each(t, options{seats: &plans.Seats{PerAccount: 0, PerProduct: 200, Platform: 1000}}, func(t *testing.T, h *harness) {
		defer h.runner.Release()
		q := h.submit(mQueue, "", `{"positivePrompt":"block"}`)
		if q.Code != 200 {
			t.Fatalf("submit: %d %s", q.Code, q.Raw)
		}
		<-h.runner.started
		stream := q.str("status_url") + "/stream"
		hd := h.call(http.MethodHead, stream, "")
		if hd.Code != 200 || hd.Header.Get("Content-Type") != "text/event-stream" || hd.Raw != "" {
			t.Errorf("HEAD stream: %d %v %q", hd.Code, hd.Header, hd.Raw)
		}
		if st := h.call(http.MethodGet, q.str("status_url"), ""); st.Code != 200 || st.str("status") != "IN_PROGRESS" {
			t.Errorf("status after HEAD: %d %s", st.Code, st.Raw)
		}
		if g := h.call(http.MethodGet, stream, ""); g.Code != 503 || g.str("error") != "stream_declined" {
			t.Errorf("GET stream with no seat: %d %s", g.Code, g.Raw)
		}
		missing := h.queue.URL + "/svc-serverless/" + mQueue + "/requests/no-such-request/status/stream"
		if nf := h.call(http.MethodHead, missing, ""); nf.Code != 404 {
			t.Errorf("HEAD stream of no job: %d %v", nf.Code, nf.Header)
		}
		if un := h.callKey("svc_bad", http.MethodHead, stream, ""); un.Code != 401 {
			t.Errorf("HEAD stream without a valid key: %d", un.Code)
		}
	})
}
