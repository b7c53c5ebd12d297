package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/client"
)

// recordSleeps makes c's waits between status reads instant and returns what it was asked to wait.
func recordSleeps(c *client.Client) func() []time.Duration {
	var mu sync.Mutex
	var got []time.Duration
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d)
		return ctx.Err()
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), got...)
	}
}

// TestREAD05_WaitFallsBackWhenTheStreamIsDeclined: with every held-connection seat taken the
// status stream answers 503 stream_declined; Wait then follows the job by status reads, and a
// read refused 429 rate_limited (the read bucket spent) is waited out for its Retry-After, not
// returned. Reads are spaced further apart as the job runs, so a few Waits do not spend the
// bucket.
func TestREAD05_WaitFallsBackWhenTheStreamIsDeclined(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream func(w http.ResponseWriter)
	}{
		{"stream_declined", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"stream_declined","error_type":"CapacityError","message":"No seat is free for a status stream.","retry":"after_retry_after","charged":"no","declined":"account_busy"}`)
		}},
		{"rate_limited", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":"rate_limited","error_type":"RateLimitError","message":"Slow down.","retry":"after_retry_after","charged":"no","bucket":"read"}`)
		}},
		{"bad gateway", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html>bad gateway</html>")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/svc-serverless/m/requests/r1/status/stream":
					tc.stream(w)
				case "/svc-serverless/m/requests/r1/status":
					switch reads.Add(1) {
					case 1, 2, 4:
						fmt.Fprint(w, `{"status":"IN_PROGRESS","request_id":"r1"}`)
					case 3:
						w.Header().Set("Retry-After", "3")
						w.Header().Set("X-Should-Retry", "true")
						w.WriteHeader(http.StatusTooManyRequests)
						fmt.Fprint(w, `{"error":"rate_limited","error_type":"RateLimitError","message":"Slow down.","retry":"after_retry_after","charged":"no","bucket":"read","retry_after":3}`)
					default:
						fmt.Fprint(w, `{"status":"COMPLETED","request_id":"r1"}`)
					}
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			c := client.New("k", client.WithQueueURL(srv.URL))
			sleeps := recordSleeps(c)
			var seen []string
			j, err := c.Wait(context.Background(), "m", "r1", func(j *client.Job) { seen = append(seen, j.Status) })
			if err != nil || !j.Done() {
				t.Fatalf("Wait: %+v %v", j, err)
			}
			if len(seen) != 4 || seen[3] != "COMPLETED" {
				t.Fatalf("progress %v", seen)
			}
			got := sleeps()
			var total time.Duration
			waitedOut := false
			for i, d := range got {
				total += d
				if d >= 3*time.Second {
					waitedOut = true
				}
				if i > 0 && d < time.Second {
					t.Fatalf("reads %v apart: under the poll interval", got)
				}
			}
			if !waitedOut {
				t.Fatalf("waits %v: the 429's Retry-After of 3 s was not honoured", got)
			}
			if tc.name == "rate_limited" && got[0] < 2*time.Second {
				t.Fatalf("waits %v: the stream's 429 Retry-After of 2 s was not honoured before the first read", got)
			}
			if reads.Load() != 5 {
				t.Fatalf("%d status reads, want 5", reads.Load())
			}
		})
	}
}

// TestWaitReturnsARefusalThatCannotPass: a 404 from the stream (a job of another model, an
// unknown id) is the answer; Wait does not poll a job that is not there.
func TestWaitReturnsARefusalThatCannotPass(t *testing.T) {
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"not_found","message":"No such request."}`)
	}))
	defer srv.Close()
	c := client.New("k", client.WithQueueURL(srv.URL))
	recordSleeps(c)
	if _, err := c.Wait(context.Background(), "m", "r1", nil); !client.IsCode(err, "not_found") || reads.Load() != 1 {
		t.Fatalf("Wait: %v after %d requests", err, reads.Load())
	}
}
