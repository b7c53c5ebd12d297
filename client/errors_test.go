package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/client"
)

// TestERR_ValidationRefusalListsEveryProblem: a submit the queue host refuses 422 for several
// fields comes back as *client.Error with each detail entry typed, and its text names every
// field, not just the first; the text carries no "modelexec:" prefix of its own.
func TestERR_ValidationRefusalListsEveryProblem(t *testing.T) {
	_, err := freshClient(t).Submit(context.Background(), "image-4b",
		map[string]any{"positivePrompt": "a fox", "width": 99999, "height": 5, "steps": 0}, client.SubmitOptions{})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 422 || e.Code != "invalid_input" {
		t.Fatalf("submit: %#v", err)
	}
	fields := map[string]bool{}
	for _, d := range e.Detail {
		if d.Msg == "" || d.Type == "" {
			t.Fatalf("detail entry %+v", d)
		}
		fields[d.Field()] = true
		if !strings.Contains(err.Error(), d.Field()+": "+d.Msg) {
			t.Fatalf("error text %q lacks %s: %s", err, d.Field(), d.Msg)
		}
	}
	for _, f := range []string{"width", "height", "steps"} {
		if !fields[f] {
			t.Fatalf("detail %+v names no %s", e.Detail, f)
		}
	}
	if strings.HasPrefix(err.Error(), "modelexec:") || e.Header.Get("Content-Type") == "" || e.RequestID == "" {
		t.Fatalf("error %q, header %v", err, e.Header)
	}
}

// TestERR_ErrorCarriesRetryAfterAndShouldRetry: the answer's Retry-After (seconds or an HTTP
// date) and x-should-retry reach the *client.Error, and the request id is read from
// X-Request-Id when the body has none; Cancel returns the cancel answer with its credits.
func TestERR_ErrorCarriesRetryAfterAndShouldRetry(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/svc-serverless/m/requests/r1/status":
			w.Header().Set("Retry-After", "7")
			w.Header().Set("X-Should-Retry", "true")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":"rate_limited","error_type":"RateLimitError","message":"Slow down.","retry":"after_retry_after","charged":"no","request_id":"req_1"}`)
		case "/svc-serverless/m/requests/r2/status":
			w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			w.Header().Set("X-Should-Retry", "false")
			w.Header().Set("X-Request-Id", "req_2")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"api_disabled","message":"Paused.","retry":"never","charged":"no"}`)
		case "/svc-serverless/m/requests/r3/cancel":
			fmt.Fprint(w, `{"status":"CANCELLED","request_id":"r3","credits_charged":0,"credits_refunded":4}`)
		}
	}))
	defer srv.Close()
	c := client.New("k", client.WithQueueURL(srv.URL))
	ctx := context.Background()
	_, err := c.Status(ctx, "m", "r1", false)
	var e *client.Error
	if !errors.As(err, &e) || e.RetryAfter != 7*time.Second || e.ShouldRetry == nil || !*e.ShouldRetry || e.RequestID != "req_1" || e.Charged != "no" {
		t.Fatalf("429: %#v", err)
	}
	_, err = c.Status(ctx, "m", "r2", false)
	if !errors.As(err, &e) || e.RetryAfter < 59*time.Minute || e.ShouldRetry == nil || *e.ShouldRetry || e.RequestID != "req_2" {
		t.Fatalf("503: %#v", err)
	}
	cn, err := c.Cancel(ctx, "m", "r3")
	if err != nil || cn.Status != "CANCELLED" || cn.CreditsCharged == nil || *cn.CreditsCharged != 0 || cn.CreditsRefunded == nil || *cn.CreditsRefunded != 4 {
		t.Fatalf("cancel: %+v %v", cn, err)
	}
}
