package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestKEY26_StatusStreamEndsOnRevocation: a status stream opened before its key was revoked
// does not go on sending the job's status: within a second or so of the revocation it sends
// an `error` event carrying the error body (key_revoked) and closes, while the job still runs.
// Proves KEY-26 for held streams (a read answers key_revoked within 2 s of the revocation).
func TestKEY26_StatusStreamEndsOnRevocation(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		defer h.runner.Release()
		q := h.submit(mQueue, "", `{"positivePrompt":"block"}`)
		if q.Code != 200 {
			t.Fatalf("submit: %d %s", q.Code, q.Raw)
		}
		<-h.runner.started
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a guard only
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, q.str("status_url")+"/stream", nil)
		req.Header.Set("Authorization", "Bearer "+h.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("stream: %d", res.StatusCode)
		}
		lines := bufio.NewScanner(res.Body)
		if !lines.Scan() || !strings.Contains(lines.Text(), `"IN_PROGRESS"`) {
			t.Fatalf("first event: %q", lines.Text())
		}
		pk, err := h.auth.Parse(h.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.auth.Revoke(context.Background(), pk.ID); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		var event, data string
		for lines.Scan() {
			switch l := lines.Text(); {
			case strings.HasPrefix(l, "event: "):
				event = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: ") && event == "error":
				data = strings.TrimPrefix(l, "data: ")
			}
		}
		if event != "error" || data == "" {
			t.Fatalf("the stream closed without an error event (last event %q) %s after the revocation", event, time.Since(revoked))
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(data), &body); err != nil || body["error"] != "key_revoked" || body["request_id"] == nil {
			t.Fatalf("error event: %s (%v)", data, err)
		}
		if d := time.Since(revoked); d > 2*time.Second {
			t.Errorf("the stream ended %s after the revocation, want within 2 s", d)
		}
	})
}
