package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/jsonscan"
)

func code(t *testing.T, err error) apierr.Code {
	t.Helper()
	e, ok := apierr.As(err)
	if !ok {
		t.Fatalf("not catalogued: %v", err)
	}
	return e.Code
}

// TestERR32_BodyLimit proves ERR-32: over 1 MiB is body_too_large with limit_bytes 1048576, on
// Content-Length first and again while streaming (absent or understated length).
func TestERR32_BodyLimit(t *testing.T) {
	big := bytes.Repeat([]byte("a"), MaxBody+1)
	exact := bytes.Repeat([]byte("a"), MaxBody)
	cases := []struct {
		name   string
		body   io.Reader
		length int64
		tooBig bool
	}{
		{"declared over", strings.NewReader("{}"), MaxBody + 1, true},
		{"streamed over, no length", io.MultiReader(bytes.NewReader(big)), -1, true},
		{"streamed over, understated", bytes.NewReader(big), 10, true},
		{"exactly 1 MiB", bytes.NewReader(exact), MaxBody, false},
		{"exactly 1 MiB streamed", io.MultiReader(bytes.NewReader(exact)), -1, false},
		{"small", strings.NewReader(`{"a":1}`), 7, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/x", c.body)
			r.ContentLength = c.length
			b, err := ReadBody(r)
			if !c.tooBig {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if code(t, err) != apierr.BodyTooLarge {
				t.Fatalf("%v", err)
			}
			e, _ := apierr.As(err)
			if e.Fields["limit_bytes"] != 1048576 || b != nil {
				t.Fatalf("fields %v", e.Fields)
			}
			status, body := ErrorBody(e, AccountSurface)
			if status != 413 || body["limit_bytes"] != 1048576 || body["retry"] != "never" {
				t.Fatalf("%d %v", status, body)
			}
		})
	}
	if MaxBody != 1048576 {
		t.Fatal(MaxBody)
	}
}

// TestERR60_DecodeObject proves ERR-60: invalid_json when it does not parse, invalid_body when it
// parses to anything but an object.
func TestERR60_DecodeObject(t *testing.T) {
	for in, want := range map[string]apierr.Code{
		`{`: apierr.InvalidJSON, `{"a":}`: apierr.InvalidJSON, `{"a":1}{}`: apierr.InvalidJSON, `nul`: apierr.InvalidJSON,
		`{'a':1}`: apierr.InvalidJSON, "\x00": apierr.InvalidJSON, `{"a":1,}`: apierr.InvalidJSON,
		`[]`: apierr.InvalidBody, `[{"a":1}]`: apierr.InvalidBody, `null`: apierr.InvalidBody, `1`: apierr.InvalidBody,
		`"s"`: apierr.InvalidBody, `true`: apierr.InvalidBody,
	} {
		_, err := DecodeObject([]byte(in))
		if err == nil || code(t, err) != want {
			t.Errorf("DecodeObject(%q) = %v, want %s", in, err, want)
		}
	}
	for _, in := range []string{``, ` `, "\n", `{}`, ` {"a":{"b":[1,2]}} `, `{"a":null}`} {
		m, err := DecodeObject([]byte(in))
		if err != nil || m == nil {
			t.Errorf("DecodeObject(%q) = %v %v", in, m, err)
		}
	}
	// DecodeInto: a wrong field type is invalid_body naming the field.
	var v struct {
		N int `json:"n"`
	}
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"n":"x"}`))
	err := DecodeInto(r, &v)
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.InvalidBody || len(e.Detail) != 1 || !slices.Equal(e.Detail[0].Loc, []any{"body", "n"}) {
		t.Fatalf("%v %+v", err, e)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader(`{"n":3}`))
	if err := DecodeInto(r, &v); err != nil || v.N != 3 {
		t.Fatal(err)
	}
}

// FuzzDecodeObject: never panics; accepts exactly the JSON objects (and an empty body); refuses
// with one of the two codes otherwise: invalid_json exactly for a text that is not JSON, but for
// one nested deeper than MaxDepth, which is invalid_body (its limit) whether or not the rest of
// it would parse (refuseUnparsed).
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":[1,{"b":null}]}`, "[]", "null", `{"a":`, "\xff", `{"a":"\ud800"}`, "  {}  ", `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeObject(b)
		if err != nil {
			if m != nil {
				t.Fatal("refused with a value")
			}
			c := code(t, err)
			if c != apierr.InvalidJSON && c != apierr.InvalidBody {
				t.Fatalf("code %s", c)
			}
			tooDeep := c == apierr.InvalidBody && jsonscan.Measure(b).Depth > MaxDepth
			if (c == apierr.InvalidJSON) == json.Valid(b) && !tooDeep {
				t.Fatalf("%s for %q (valid=%v)", c, b, json.Valid(b))
			}
			return
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		if _, ok := v.(map[string]any); !ok {
			t.Fatalf("accepted a non-object %q", b)
		}
	})
}

// TestERR15_ErrorBody proves ERR-01 (fields), ERR-03 (boolean charged), ERR-14/ERR-15 (queue and
// sync hosts: request refusals are 422 with detail [{loc:[body],...}]; caller codes keep their
// status), ERR-44 (model_not_synchronous stays 400), ERR-10/ERR-12 (type allowed on the status
// written, per surface).
func TestERR15_ErrorBody(t *testing.T) {
	e := apierr.New(apierr.InvalidJSON)
	status, body := ErrorBody(e, AccountSurface)
	if status != 400 || body["detail"] != nil {
		t.Fatalf("account surface: %d %v", status, body)
	}
	for _, k := range []string{"error", "error_type", "message", "retry", "charged", "docs"} {
		if _, ok := body[k]; !ok {
			t.Fatalf("body lacks %s: %v", k, body)
		}
	}
	if body["docs"] != "/docs/errors/invalid_json" || body["charged"] != "no" || body["retry"] != "never" {
		t.Fatalf("%v", body)
	}
	for _, s := range []Surface{QueueSurface, SyncSurface} {
		status, body := ErrorBody(apierr.New(apierr.InvalidJSON), s)
		d, _ := body["detail"].([]apierr.Violation)
		if status != 422 || len(d) != 1 || !slices.Equal(d[0].Loc, []any{"body"}) || d[0].Type != "invalid_json" || d[0].Msg == "" {
			t.Fatalf("surface %d: %d %v", s, status, body)
		}
		// A named field keeps its own loc.
		named := apierr.New(apierr.InvalidInput).WithDetail(apierr.Violation{Loc: []any{"body", "width"}, Msg: "too big", Type: "value_error"})
		status, body = ErrorBody(named, s)
		d, _ = body["detail"].([]apierr.Violation)
		if status != 422 || len(d) != 1 || d[0].Loc[1] != "width" {
			t.Fatalf("named: %d %v", status, body)
		}
		// Caller codes keep their status.
		for c, want := range map[apierr.Code]int{apierr.InsufficientScope: 403, apierr.InsufficientCredits: 402, apierr.RateLimited: 429,
			apierr.InvalidAPIKey: 401, apierr.ModelNotSynchronous: 400, apierr.NotFound: 404} {
			if st, b := ErrorBody(apierr.New(c), s); st != want || b["detail"] != nil {
				t.Errorf("%s on surface %d: %d %v", c, s, st, b["detail"])
			}
		}
	}
	// ERR-03: boolean charged codes default to false and take the known outcome.
	if _, b := ErrorBody(apierr.New(apierr.WaitCapacity), SyncSurface); b["charged"] != false {
		t.Fatalf("wait_capacity charged %v", b["charged"])
	}
	rt := apierr.New(apierr.RunTimedOut)
	rt.Charged = true
	if _, b := ErrorBody(rt, SyncSurface); b["charged"] != true {
		t.Fatalf("run_timed_out charged %v", b["charged"])
	}
	// Status override (service_busy 503 when admission could not run).
	sb := apierr.New(apierr.ServiceBusy)
	sb.Status = 503
	if st, _ := ErrorBody(sb, QueueSurface); st != 503 {
		t.Fatal(st)
	}
	// Every row, on every surface: the type written is allowed for the status written.
	allowed := map[int][]string{400: {"ConflictError", "ValidationError"}, 401: {"AuthenticationError"}, 402: {"PaymentError"},
		403: {"PermissionError"}, 404: {"NotFoundError"}, 405: {"ValidationError"}, 409: {"CancellationError", "ConflictError"},
		410: {"GoneError", "NotFoundError"}, 413: {"PayloadTooLargeError"}, 422: {"ContentPolicyError", "ValidationError"},
		428: {"PreconditionError"}, 429: {"CapacityError", "RateLimitError"}, 451: {"RegionError"},
		500: {"ConfigurationError", "InternalError"}, 501: {"NotImplementedError"}, 502: {"ContentPolicyError", "UpstreamError"},
		503: {"CapacityError", "ConfigurationError", "InternalError", "UpstreamError"}}
	for _, s := range []Surface{AccountSurface, QueueSurface, SyncSurface} {
		for _, c := range apierr.Codes() {
			st, b := ErrorBody(apierr.New(c), s)
			ok := allowed[st]
			if s == SyncSurface && st == 500 {
				ok = []string{"ExecutionError", "InternalError"}
			}
			if ok == nil {
				continue // 202, 408, 504: statuses the spec gives no type list for
			}
			if !slices.Contains(ok, b["error_type"].(string)) {
				t.Errorf("surface %d: %s answers %d %s (allowed %v)", s, c, st, b["error_type"], ok)
			}
		}
	}
}

func serve(s Surface, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	Wrap(s, slog.New(slog.DiscardHandler), h).ServeHTTP(w, r)
	return w
}

// TestERR04_WriteError proves ERR-04 (x-should-retry: false exactly with never/new_key/poll_first),
// ERR-05 (Retry-After whole seconds), ERR-06 (X-Request-Id equals the body's request_id), and that
// an uncatalogued error is answered internal without echoing it.
func TestERR04_WriteError(t *testing.T) {
	for _, c := range apierr.Codes() {
		w := serve(AccountSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
			return apierr.New(c).WithRetryAfter(3)
		}), httptest.NewRequest("GET", "/", nil))
		want := apierr.ShouldNotRetry(apierr.Lookup(c).Retry)
		if got := w.Header().Get("x-should-retry") == "false"; got != want {
			t.Errorf("%s: x-should-retry false = %v, want %v", c, got, want)
		}
		if w.Header().Get("Retry-After") != "3" {
			t.Errorf("%s: Retry-After %q", c, w.Header().Get("Retry-After"))
		}
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if id := w.Header().Get("X-Request-Id"); id == "" || body["request_id"] != id {
			t.Errorf("%s: request_id %v, header %q", c, body["request_id"], id)
		}
		if c == apierr.RunTimedOut {
			continue // carries the job's request id by design
		}
	}
	w := serve(QueueSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
		return errors.New("pq: password authentication failed for user secret")
	}), httptest.NewRequest("GET", "/", nil))
	if w.Code != 500 || strings.Contains(w.Body.String(), "secret") || !strings.Contains(w.Body.String(), `"error":"internal"`) {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	// A panic is answered internal with the request id.
	w = serve(AccountSurface, Func(func(w http.ResponseWriter, r *http.Request) error { panic("boom") }), httptest.NewRequest("GET", "/", nil))
	if w.Code != 500 || w.Header().Get("X-Request-Id") == "" {
		t.Fatalf("panic: %d", w.Code)
	}
}

// TestERR06_RequestIDTopLevel: a body whose nested objects carry their own request_id (a job list)
// still gets the HTTP request id at the top level.
func TestERR06_RequestIDTopLevel(t *testing.T) {
	w := serve(AccountSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
		WriteJSON(w, r, 200, map[string]any{"object": "list", "data": []any{map[string]any{"request_id": "job_1"}}})
		return nil
	}), httptest.NewRequest("GET", "/", nil))
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body["request_id"] != w.Header().Get("X-Request-Id") {
		t.Fatalf("top-level request_id %v, header %s", body["request_id"], w.Header().Get("X-Request-Id"))
	}
	// A body that names its own top-level request_id keeps it.
	w = serve(AccountSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
		WriteJSON(w, r, 200, map[string]any{"request_id": "job_2"})
		return nil
	}), httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(w.Body.String(), `"request_id":"job_2"`) || strings.Count(w.Body.String(), "request_id") != 1 {
		t.Fatal(w.Body.String())
	}
	w = serve(AccountSurface, Func(func(w http.ResponseWriter, r *http.Request) error {
		WriteJSON(w, r, 200, map[string]any{})
		return nil
	}), httptest.NewRequest("GET", "/", nil))
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["request_id"] == "" {
		t.Fatal(w.Body.String())
	}
}

// TestKEY01_Credential proves KEY-01 (Bearer), KEY-02 (bare), KEY-03 (Key), ORD-03 (absent header).
func TestKEY01_Credential(t *testing.T) {
	const k = "svc_sk_abc"
	for h, want := range map[string]string{
		"Bearer " + k: k, "bearer " + k: k, "BEARER  " + k: k, k: k, "Key " + k: k, "key " + k: k,
		"  Bearer " + k + "  ": k, "Basic dXNlcjpwYXNz": "Basic dXNlcjpwYXNz", "": "", "Bearer": "Bearer",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", h)
		got, ok := credential(r)
		if !ok || got != want {
			t.Errorf("credential(%q) = %q %v, want %q", h, got, ok, want)
		}
	}
	if _, ok := credential(httptest.NewRequest("GET", "/", nil)); ok {
		t.Fatal("no header read as present")
	}
}

// TestDecodeBounds: every decoder of a JSON body refuses one that holds more than MaxValues
// values or nests deeper than MaxDepth with invalid_body carrying the limit, before decoding
// it; a body at the bounds is decoded.
func TestDecodeBounds(t *testing.T) {
	array := func(n int) string { return `{"a":[` + strings.Repeat("{},", n-1) + "{}]}" } // n+2 values
	nest := func(d int) string { return `{"a":` + strings.Repeat("[", d-1) + strings.Repeat("]", d-1) + "}" }
	for _, c := range []struct {
		body  string
		limit int
	}{
		{array(MaxValues), MaxValues}, {nest(MaxDepth + 1), MaxDepth},
	} {
		var v struct{ A any }
		err := DecodeInto(httptest.NewRequest("POST", "/", strings.NewReader(c.body)), &v)
		e, ok := apierr.As(err)
		if !ok || e.Code != apierr.InvalidBody || e.Fields["limit"] != c.limit || v.A != nil {
			t.Fatalf("%.40s…: %v %+v", c.body, err, e)
		}
		if _, err := DecodeObject([]byte(c.body)); code(t, err) != apierr.InvalidBody {
			t.Fatalf("DecodeObject %.40s…: %v", c.body, err)
		}
	}
	for _, b := range []string{array(MaxValues - 2), nest(MaxDepth)} {
		var v struct{ A any }
		if err := DecodeInto(httptest.NewRequest("POST", "/", strings.NewReader(b)), &v); err != nil || v.A == nil {
			t.Fatalf("%.40s…: %v", b, err)
		}
	}
}
