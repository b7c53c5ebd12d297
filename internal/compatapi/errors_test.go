package compatapi

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/jobs"
)

// ERR-18..ERR-22: the surface's status mapping, code by code.
func TestERR18to22_StatusMapping(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		status  int
		code    string
		typ     string
		noRetry bool
	}{
		{"ERR-18 empty wallet", apierr.New(apierr.InsufficientCredits, "required", 5, "balance", 0), 429, "insufficient_quota", "insufficient_quota", true},
		{"ERR-18 key ceiling", apierr.New(apierr.KeyCreditCeiling), 429, "insufficient_quota", "insufficient_quota", true},
		{"ERR-19 other 402", apierr.New(apierr.Refunded), 429, "refunded", "rate_limit_error", true},
		{"ERR-20 output limit", apierr.New(apierr.OutputLimitReached), 400, "output_limit_reached", "invalid_request_error", true},
		{"ERR-21 parser refusal", &chat.ParserRefusal{Err: apierr.Newf(apierr.InvalidInput, "could not parse")}, 422, "invalid_input", "invalid_request_error", true},
		{"ERR-22 model refusal", apierr.New(apierr.ContentPolicy), 400, "content_policy", "invalid_request_error", true},
		{"plan without chat", apierr.New(apierr.PlanHasNoAPIGenerate, "plan", "free", "bucket", "interactive"), 403, "plan_has_no_chat", "permission_error", true},
		{"not configured", apierr.New(apierr.ChatNotConfigured), 503, "chat_not_configured", "server_error", true},
		{"rate limited", apierr.New(apierr.RateLimited).WithRetryAfter(2), 429, "rate_limited", "rate_limit_error", false},
		{"bad key", apierr.New(apierr.InvalidAPIKey), 401, "invalid_api_key", "authentication_error", true},
	}
	for _, c := range cases {
		got, ok := translate(c.err)
		if !ok || got.status != c.status || got.code != c.code || got.typ != c.typ || got.noRetry != c.noRetry {
			t.Errorf("%s: %d %s %s noRetry=%v, want %d %s %s %v", c.name, got.status, got.code, got.typ, got.noRetry, c.status, c.code, c.typ, c.noRetry)
		}
	}
	if _, ok := translate(errors.New("boom")); ok {
		t.Error("an uncatalogued error was translated; it must be answered as a server error, never echoed")
	}
}

// ERR-24: a key outside the alphabet is folded into it, the same way every time.
func TestERR24_IdempotencyKeyFolded(t *testing.T) {
	key := func(v string) string {
		r := httptest.NewRequest("POST", "/compat/v1/chat/completions", nil)
		if v != "" {
			r.Header.Set("Idempotency-Key", v)
		}
		return idempotencyKey(r)
	}
	if key("plain-key_1.2") != "plain-key_1.2" || key("") != "" {
		t.Fatal("keys inside the alphabet are kept as sent")
	}
	for _, odd := range []string{"has spaces", "ünïcode", string(make([]byte, 65)), "a/b"} {
		f := key(odd)
		if !jobs.ValidIdempotencyKey(f) || f != key(odd) {
			t.Fatalf("%q folded to %q", odd, f)
		}
	}
	if key("a/b") == key("a/c") {
		t.Fatal("different keys folded together")
	}
	// A key sent on two lines is the whole value, not its first line.
	r := httptest.NewRequest("POST", "/compat/v1/chat/completions", nil)
	r.Header.Add("Idempotency-Key", "first")
	r.Header.Add("Idempotency-Key", "second")
	if got := idempotencyKey(r); got == key("first") || got != key("first, second") {
		t.Fatalf("two lines folded to %q", got)
	}
}

// ERR-29 on /compat/v1: the envelope has no room for insufficient_scope's fields, so its
// message names the scope required, the others accepted and the key's.
func TestERR29_ScopeNamedInTheMessage(t *testing.T) {
	c, _ := translate(apierr.New(apierr.InsufficientScope, "required", "text:write", "accepted", []string{"text:write", "chat:write"}, "scopes", []string{}))
	want := "This key lacks the scope this route needs; required: text:write (also accepted: chat:write); this key holds no scope."
	if c.message != want || c.status != 403 {
		t.Fatalf("%d %q, want %q", c.status, c.message, want)
	}
}
