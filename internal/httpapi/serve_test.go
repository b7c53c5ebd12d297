package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// serveAccount is an account surface behind Gate.Serve with a job read and a webhook's routes;
// reached counts the requests a route's handler saw.
func serveAccount(t *testing.T) (do func(method, target string, hdr ...string) (*httptest.ResponseRecorder, map[string]any), reached *int) {
	t.Helper()
	g := &Gate{Switches: &Switches{}, Now: time.Now, Log: slog.New(slog.DiscardHandler)}
	n := 0
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n++; w.WriteHeader(200) })
	mux := http.NewServeMux()
	mux.Handle("GET /v1/jobs/{id}", ok)
	mux.Handle("POST /v1/webhooks/{id}", ok)
	mux.Handle("DELETE /v1/webhooks/{id}", ok)
	h := Wrap(AccountSurface, slog.New(slog.DiscardHandler), g.Serve(mux))
	return func(method, target string, hdr ...string) (*httptest.ResponseRecorder, map[string]any) {
		t.Helper()
		r := httptest.NewRequest(method, target, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil && w.Code != 200 {
			t.Errorf("%s %s: %d, not the error body: %q", method, target, w.Code, w.Body.String())
		}
		return w, body
	}, &n
}

// TestERR85_PathNotUTF8IsNotFound: a path whose decoded bytes are not UTF-8 (a percent-encoded
// 0xFF, an encoded surrogate) names nothing the service has: 404 not_found in the error body,
// under every method (never a 405 naming the methods of the route it resembles), after the
// Origin refusal, and no route's handler sees it (on PostgreSQL the value reached a query that
// refused its bytes: 500). Proves ERR-85 and ORD-02 for such paths.
func TestERR85_PathNotUTF8IsNotFound(t *testing.T) {
	do, reached := serveAccount(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/jobs/%FF"},
		{"GET", "/v1/jobs/req_%ED%A0%80"},
		{"POST", "/v1/webhooks/wh_%FF"},
		{"DELETE", "/v1/webhooks/wh_%C3"},
		{"PUT", "/v1/webhooks/wh_%FF"},
	} {
		w, body := do(c.method, c.path)
		if w.Code != 404 || body["error"] != "not_found" || w.Header().Get("Allow") != "" || body["request_id"] != w.Header().Get("X-Request-Id") {
			t.Errorf("%s %s: %d %v Allow %q", c.method, c.path, w.Code, body, w.Header().Get("Allow"))
		}
		if w, body := do(c.method, c.path, "Origin", "https://app.example"); w.Code != 403 || body["error"] != "browser_origin_refused" {
			t.Errorf("%s %s with Origin: %d %v", c.method, c.path, w.Code, body)
		}
	}
	if *reached != 0 {
		t.Errorf("a route's handler saw %d such requests", *reached)
	}
	if w, _ := do("GET", "/v1/jobs/req_%C3%A9"); w.Code != 200 {
		t.Errorf("a UTF-8 path value: %d", w.Code)
	}
}

// TestERR07_ConnectAnswersTheErrorBody: CONNECT, which no route takes, is answered like any
// other method no route takes, in the error body after checks 1 and 2: 405 method_not_allowed
// with Allow on a path served under other methods, 404 not_found for its usual host:port
// target; it was Go's plain-text "404 page not found". Proves ERR-07 and ORD-02 for CONNECT.
func TestERR07_ConnectAnswersTheErrorBody(t *testing.T) {
	do, reached := serveAccount(t)
	if w, body := do("CONNECT", "api.example.com:443"); w.Code != 404 || body["error"] != "not_found" || body["request_id"] != w.Header().Get("X-Request-Id") {
		t.Errorf("CONNECT host:port: %d %v", w.Code, body)
	}
	if w, body := do("CONNECT", "/v1/nothing"); w.Code != 404 || body["error"] != "not_found" {
		t.Errorf("CONNECT /v1/nothing: %d %v", w.Code, body)
	}
	w, body := do("CONNECT", "/v1/webhooks/wh_1")
	if w.Code != 405 || body["error"] != "method_not_allowed" || body["error_type"] != "ValidationError" || w.Header().Get("Allow") != "POST, DELETE" {
		t.Errorf("CONNECT /v1/webhooks/wh_1: %d %v Allow %q", w.Code, body, w.Header().Get("Allow"))
	}
	if w, body := do("CONNECT", "api.example.com:443", "Origin", "https://app.example"); w.Code != 403 || body["error"] != "browser_origin_refused" {
		t.Errorf("CONNECT with Origin: %d %v", w.Code, body)
	}
	if *reached != 0 {
		t.Errorf("a route's handler saw %d CONNECT requests", *reached)
	}
}
