package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// TestKEY17_WrapStripsCORS proves KEY-17 by construction: whatever a handler behind Wrap sets
// (signed file links, a future route), no Access-Control-* header leaves the server, whether the
// handler writes the status, writes the body straight away, or flushes first.
func TestKEY17_WrapStripsCORS(t *testing.T) {
	set := func(w http.ResponseWriter) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Methods", "GET")
		w.Header()["access-control-expose-headers"] = []string{"X-Request-Id"} // not canonicalised
		w.Header().Set("Content-Type", "text/plain")
	}
	for name, h := range map[string]http.HandlerFunc{
		"WriteHeader": func(w http.ResponseWriter, r *http.Request) { set(w); w.WriteHeader(204) },
		"Write":       func(w http.ResponseWriter, r *http.Request) { set(w); _, _ = w.Write([]byte("ok")) },
		"Flush":       func(w http.ResponseWriter, r *http.Request) { set(w); w.(http.Flusher).Flush() },
		"Error": func(w http.ResponseWriter, r *http.Request) {
			set(w)
			WriteError(w, r, apierr.New(apierr.NotFound))
		},
	} {
		r := httptest.NewRequest("OPTIONS", "/files/x", nil)
		r.Header.Set("Origin", "https://app.example")
		w := serve(AccountSurface, h, r)
		for k := range w.Result().Header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s: %s left the server", name, k)
			}
		}
		if w.Header().Get("Content-Type") == "" || w.Header().Get("X-Request-Id") == "" {
			t.Errorf("%s: other headers were lost: %v", name, w.Header())
		}
	}
}

// TestERR05_RetryAfterAlwaysSent proves ERR-05: every code whose advice is after_retry_after
// carries a Retry-After header in whole seconds, even where the handler named no figure.
func TestERR05_RetryAfterAlwaysSent(t *testing.T) {
	n := 0
	for _, c := range apierr.Codes() {
		if apierr.Lookup(c).Retry != apierr.RetryAfterRetryAfter {
			continue
		}
		n++
		w := serve(QueueSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
			return apierr.New(c)
		}), httptest.NewRequest("GET", "/", nil))
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("%s without a figure: Retry-After %q", c, got)
		}
		w = serve(QueueSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
			return apierr.New(c).WithRetryAfter(5)
		}), httptest.NewRequest("GET", "/", nil))
		if got := w.Header().Get("Retry-After"); got != "5" {
			t.Errorf("%s with 5: Retry-After %q", c, got)
		}
	}
	if n < 4 {
		t.Fatalf("only %d after_retry_after codes: limiter_unavailable, rate_limited, stream_declined, wait_capacity at least", n)
	}
	// Advice other than after_retry_after names no wait.
	w := serve(AccountSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
		return apierr.New(apierr.InvalidAPIKey)
	}), httptest.NewRequest("GET", "/", nil))
	if got := w.Header().Get("Retry-After"); got != "" {
		t.Fatalf("invalid_api_key: Retry-After %q", got)
	}
}

// pacer answers every admission with one decision.
type pacer struct {
	d        ratelimit.Decision
	err      error
	fuseShut bool
}

func (pacer) NoCapacity(string, ratelimit.Bucket) bool { return false }

func (p pacer) Fuse(string, ratelimit.Bucket, time.Time) (ratelimit.Decision, bool) {
	return ratelimit.Decision{Limit: 5, ResetAfter: time.Second}, !p.fuseShut
}
func (p pacer) Admit(context.Context, ratelimit.Request) (ratelimit.Decision, error) {
	return p.d, p.err
}

// TestERR38_RateLimitedNamesAWait proves ERR-38 and ERR-05 at the limiter seam: a bucket refusal
// is 429 rate_limited with bucket, retry_after, reason bucket_spent and a Retry-After header of
// whole seconds rounded up, never 0 even when the limiter's figure rounds to nothing.
func TestERR38_RateLimitedNamesAWait(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	p := &auth.Principal{Account: auth.Account{ID: "acct", Plan: auth.Pro}, Key: auth.KeyRecord{ID: "abcdefghijkl"}}
	for wait, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, 1500 * time.Millisecond: 2, 3 * time.Second: 3} {
		g := &Gate{Pacer: pacer{d: ratelimit.Decision{Refusal: ratelimit.BucketSpent, Limit: 5, RetryAfter: wait}},
			Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}
		w := serve(AccountSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
			return g.Admit(w, r, p, ratelimit.Write, 1)
		}), httptest.NewRequest("POST", "/", nil))
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != 429 || body["error"] != "rate_limited" || body["reason"] != "bucket_spent" || body["bucket"] != "write" ||
			body["retry_after"] != float64(want) || w.Header().Get("Retry-After") != strconv.Itoa(want) {
			t.Errorf("wait %v: %d %v Retry-After %q, want %d", wait, w.Code, body, w.Header().Get("Retry-After"), want)
		}
	}
}

// TestERR07_MethodNotAllowed proves ERR-07's 405 row is reachable: a path served under other
// methods answers 405 method_not_allowed (ValidationError) with an Allow header; an unknown path
// stays 404 not_found (VER-03: the old /api prefix); checks 1 and 2 still come first.
func TestERR07_MethodNotAllowed(t *testing.T) {
	g := &Gate{Switches: &Switches{}, Now: time.Now, Log: slog.New(slog.DiscardHandler)}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	mux := http.NewServeMux()
	mux.Handle("GET /v1/me", ok)
	mux.Handle("POST /v1/webhooks/{id}", ok)
	mux.Handle("DELETE /v1/webhooks/{id}", ok)
	mux.Handle("/", g.Fallback(mux))
	h := Wrap(AccountSurface, slog.New(slog.DiscardHandler), mux)
	do := func(method, path string, hdr ...string) (*httptest.ResponseRecorder, map[string]any) {
		r := httptest.NewRequest(method, path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		return w, body
	}
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/v1/me", "GET, HEAD"},
		{"POST", "/v1/me", "GET, HEAD"},
		{"OPTIONS", "/v1/me", "GET, HEAD"},
		{"GET", "/v1/webhooks/wh_1", "POST, DELETE"},
	} {
		w, body := do(c.method, c.path)
		if w.Code != 405 || body["error"] != "method_not_allowed" || body["error_type"] != "ValidationError" ||
			w.Header().Get("Allow") != c.allow || body["request_id"] != w.Header().Get("X-Request-Id") {
			t.Errorf("%s %s: %d %v Allow %q", c.method, c.path, w.Code, body, w.Header().Get("Allow"))
		}
	}
	for _, path := range []string{"/v1/nothing", "/api/v1/me", "/v1/webhooks"} {
		if w, body := do("GET", path); w.Code != 404 || body["error"] != "not_found" || w.Header().Get("Allow") != "" {
			t.Errorf("GET %s: %d %v", path, w.Code, body)
		}
	}
	if w, _ := do("GET", "/v1/me"); w.Code != 200 {
		t.Fatalf("the route itself: %d", w.Code)
	}
	if w, body := do("DELETE", "/v1/me", "Origin", "https://app.example"); w.Code != 403 || body["error"] != "browser_origin_refused" {
		t.Fatalf("Origin before the method: %d %v", w.Code, body)
	}
	g.Switches.APIDisabled.Store(true)
	if w, body := do("DELETE", "/v1/me", "Origin", "x"); w.Code != 503 || body["error"] != "api_disabled" {
		t.Fatalf("api_disabled first: %d %v", w.Code, body)
	}
}

// TestKEY13_AccessLogNamesKeyID proves KEY-13 for logs: once a presented key is well formed, the
// access line of the request names its public id, also when the request is refused later in
// the check order: as claimed_key_id until its secret was checked (key_id after, see
// TestKEY13_AccessLogSaysWhichKeyIDsWereChecked); the key itself and its secret never appear.
func TestKEY13_AccessLogNamesKeyID(t *testing.T) {
	f := auth.Format{Prefix: auth.DefaultPrefix}
	key, id, err := f.Mint()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	now := func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }
	g := &Gate{Auth: auth.NewService(nil, f, auth.NewHasher("deployment-secret"), now, log), Pacer: pacer{fuseShut: true},
		Now: now, Log: log}
	h := Wrap(AccountSurface, log, g.Protect(Route{Bucket: ratelimit.Read}, http.NotFoundHandler()))
	r := httptest.NewRequest("GET", "/v1/me", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 429 {
		t.Fatalf("want the fuse refusal, got %d %s", w.Code, w.Body)
	}
	// Refused before its secret was checked, the key is only claimed: anyone can write its id.
	var line struct {
		Msg     string `json:"msg"`
		KeyID   string `json:"key_id"`
		Claimed string `json:"claimed_key_id"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil || line.Msg != "request" || line.Claimed != id || line.KeyID != "" {
		t.Fatalf("access line %s (%v), want claimed_key_id %s and no key_id", buf.String(), err, id)
	}
	if strings.Contains(buf.String(), key[len(auth.DefaultPrefix)+13:]) {
		t.Fatal("the secret reached the log")
	}
	// A key pasted into the path is not written whole either (any place: the route's id,
	// an unknown path).
	for _, path := range []string{"/v1/jobs/" + key, "/" + key, "/svc-serverless/x/requests/" + key + "/status"} {
		buf.Reset()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		if strings.Contains(buf.String(), key[len(auth.DefaultPrefix)+13:len(auth.DefaultPrefix)+30]) || !strings.Contains(buf.String(), "bytes)") {
			t.Fatalf("path %s logged as %s", path, buf.String())
		}
	}
	// A malformed key is never named.
	buf.Reset()
	r.Header.Set("Authorization", "Bearer "+key[:20])
	h.ServeHTTP(httptest.NewRecorder(), r)
	if strings.Contains(buf.String(), "key_id") {
		t.Fatalf("malformed key logged: %s", buf.String())
	}
}

// TestRL04_KeylessAnswersCarryRateHeadersWhileTheLimiterIsDown: every response carries the
// rate-limit headers (spec 01 "Endpoints"), a keyless one (the catalogue, health) too while the
// limiter cannot be reached: they say what the pacer answered in its place, as keyed answers do.
func TestRL04_KeylessAnswersCarryRateHeadersWhileTheLimiterIsDown(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	g := &Gate{Pacer: pacer{d: ratelimit.Decision{Limit: 60, ResetAfter: 5 * time.Second}, err: errors.New("limiter unreachable")},
		Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}
	w := serve(AccountSurface, g.Keyless(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, r, http.StatusOK, map[string]any{"ok": true})
	})), httptest.NewRequest("GET", "/v1/catalogue", nil))
	for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if w.Header().Get(h) == "" {
			t.Errorf("%d answer without %s while the limiter is down: %v", w.Code, h, w.Header())
		}
	}
}
