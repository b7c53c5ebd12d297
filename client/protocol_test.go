package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/client"
)

// TestWaitFallsBackToPolling: when the status stream ends before the job settles (a proxy cut
// it, or its time ran out), Wait goes on with status reads until COMPLETED, reporting each
// document to onProgress.
func TestWaitFallsBackToPolling(t *testing.T) {
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			t.Errorf("no key on %s", r.URL)
		}
		switch r.URL.Path {
		case "/svc-serverless/m/requests/r1/status/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"status\":\"IN_QUEUE\",\"request_id\":\"r1\",\"queue_position\":2}\n\n")
			fmt.Fprint(w, "data: {\"status\":\"IN_PROGRESS\",\"request_id\":\"r1\",\"logs\":[{\"message\":\"step 1\"}]}\n\n")
		case "/svc-serverless/m/requests/r1/status":
			if r.URL.Query().Get("logs") != "1" {
				t.Errorf("status read without logs: %s", r.URL)
			}
			if reads.Add(1) < 2 {
				fmt.Fprint(w, `{"status":"IN_PROGRESS","request_id":"r1"}`)
				return
			}
			fmt.Fprint(w, `{"status":"COMPLETED","request_id":"r1","credits_charged":3}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := client.New("k", client.WithQueueURL(srv.URL+"/"), client.WithPollInterval(time.Millisecond))
	var seen []string
	j, err := c.Wait(context.Background(), "m", "r1", func(j *client.Job) { seen = append(seen, j.Status) })
	if err != nil || !j.Done() || j.CreditsCharged != 3 {
		t.Fatalf("Wait: %+v %v", j, err)
	}
	if got := strings.Join(seen, ","); got != "IN_QUEUE,IN_PROGRESS,IN_PROGRESS,COMPLETED" {
		t.Fatalf("progress %s", got)
	}
}

// TestWaitAddsUpStreamedLogs: each event of the status stream carries the log lines new since
// the last one; Wait hands onProgress documents whose Logs hold every line so far, once each.
func TestWaitAddsUpStreamedLogs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"status\":\"IN_PROGRESS\",\"request_id\":\"r1\",\"logs\":[{\"message\":\"a\"}]}\n\n")
		fmt.Fprint(w, "data: {\"status\":\"IN_PROGRESS\",\"request_id\":\"r1\",\"logs\":[{\"message\":\"b\"},{\"message\":\"c\"}]}\n\n")
		fmt.Fprint(w, "data: {\"status\":\"COMPLETED\",\"request_id\":\"r1\",\"logs\":[]}\n\n")
	}))
	defer srv.Close()
	c := client.New("k", client.WithQueueURL(srv.URL+"/"))
	var seen []string
	j, err := c.Wait(context.Background(), "m", "r1", func(j *client.Job) {
		var ms []string
		for _, l := range j.Logs {
			ms = append(ms, l.Message)
		}
		seen = append(seen, strings.Join(ms, ""))
	})
	if err != nil || !j.Done() {
		t.Fatalf("Wait: %+v %v", j, err)
	}
	if got := strings.Join(seen, ","); got != "a,abc,abc" {
		t.Fatalf("logs seen by onProgress: %s, want a,abc,abc", got)
	}
}

// TestCancelAndErrors: Cancel is a PUT on the request's cancel URL; a refusal comes back as
// *client.Error with the body's fields, and a body that is not the service's error body is
// kept whole rather than lost.
func TestCancelAndErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/svc-serverless/m/requests/r1/cancel":
			fmt.Fprint(w, `{"status":"CANCELLATION_REQUESTED"}`)
		case r.URL.Path == "/svc-serverless/m/requests/r2/cancel":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"already_completed","message":"The job has finished.","retry":"never","charged":true,"request_id":"req_9"}`)
		default:
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>bad gateway</html>")
		}
	}))
	defer srv.Close()
	c := client.New("k", client.WithQueueURL(srv.URL))
	ctx := context.Background()
	if cn, err := c.Cancel(ctx, "m", "r1"); err != nil || cn.Status != "CANCELLATION_REQUESTED" {
		t.Fatal(cn, err)
	}
	_, err := c.Cancel(ctx, "m", "r2")
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Code != "already_completed" || e.Retry != "never" || e.Charged != true || e.RequestID != "req_9" {
		t.Fatalf("refusal: %#v", err)
	}
	if !client.IsCode(err, "already_completed") || !strings.Contains(err.Error(), "req_9") {
		t.Fatalf("error text: %v", err)
	}
	_, err = c.Status(ctx, "m", "r3", false)
	if !errors.As(err, &e) || e.StatusCode != 502 || e.Code != "" || !strings.Contains(string(e.Body), "bad gateway") {
		t.Fatalf("non-service body: %#v", err)
	}
}
