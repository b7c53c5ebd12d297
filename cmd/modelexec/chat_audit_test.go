package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
)

// embeddingsUpstream is an OpenAI-compatible embeddings server answering body for every call.
func embeddingsUpstream(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newEmbeddingsWorld is newChatWorld with embed-small on an upstream answering body.
func newEmbeddingsWorld(t *testing.T, body string) *chatWorld {
	srv := embeddingsUpstream(t, body)
	return newChatWorldWith(t, nil, func(c *ServeCmd) {
		c.ReferenceModels = true
		c.OpenAIUpstream = append(c.OpenAIUpstream, "embed-small="+srv.URL+"/v1,name=mock-embed")
	})
}

// TestCHAT11_EmbeddingsWithAHoleFailRefunded: an upstream whose embeddings answer leaves an
// input without its vector (every item at index 0) fails the call, refunded, on both
// embeddings routes; it never answers 200 with a null vector the caller paid for.
func TestCHAT11_EmbeddingsWithAHoleFailRefunded(t *testing.T) {
	w := newEmbeddingsWorld(t, `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}],"usage":{"prompt_tokens":4}}`)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 4)
	before := w.balance(acct)
	r := w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":["one","two"]}`)
	if r.status != 500 || compatCode(r) != "chat_start_failed" {
		t.Fatalf("compat: %d %s, want 500 chat_start_failed", r.status, r.raw)
	}
	r = w.do("POST", "/v1/embeddings", key(), `{"input":["one","two"]}`)
	if r.status != 500 || r.body["error"] != "chat_start_failed" || r.body["charged"] != "refunded" {
		t.Fatalf("/v1: %d %s, want 500 chat_start_failed, refunded", r.status, r.raw)
	}
	if w.balance(acct) != before {
		t.Fatalf("balance %d, want %d: a failed call is refunded", w.balance(acct), before)
	}
}

// TestORD05_FuseRefusalCarriesTheFusesFigures: a request the per-instance fuse stops (more
// interactive calls with one key in a second than the fuse admits) answers 429 instance_fuse
// with the fuse's own figures in its rate headers (its limit per second, nothing left, reset at
// the next second), on /compat/v1 and /v1/embeddings, and takes nothing from the per-address
// bucket of keyless answers.
func TestORD05_FuseRefusalCarriesTheFusesFigures(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	anonymous := func() int64 {
		t.Helper()
		r := w.do("GET", "/compat/v1/no-such-route", "", "")
		n, err := strconv.ParseInt(r.header.Get("RateLimit-Remaining"), 10, 64)
		if r.status != 404 || err != nil {
			t.Fatalf("keyless probe: %d %v %s", r.status, r.header, r.raw)
		}
		return n
	}
	for _, path := range []string{"/compat/v1/embeddings", "/v1/embeddings"} {
		key := w.key(acct, nil, nil)
		before := anonymous()
		var fused []reply
		for i := 0; i < 12 && len(fused) < 3; i++ {
			// A body refused after the checks: nothing runs, nothing is charged.
			if r := w.do("POST", path, key, `{"input":[]}`); r.status == 429 {
				fused = append(fused, r)
			}
		}
		if len(fused) == 0 {
			t.Fatalf("%s: twelve calls in a row with one key, none stopped by the fuse", path)
		}
		for _, r := range fused {
			if (r.body["reason"] != "instance_fuse" && compatCode(r) != "rate_limited") || r.header.Get("Retry-After") != "1" ||
				r.header.Get("RateLimit-Limit") != "5" || r.header.Get("RateLimit-Remaining") != "0" || r.header.Get("RateLimit-Reset") != "1" {
				t.Fatalf("%s: fuse refusal %d %v %s, want RateLimit-Limit 5, Remaining 0, Reset 1", path, r.status, r.header, r.raw)
			}
		}
		if after := anonymous(); after < before-1 {
			t.Fatalf("%s: the keyless bucket went from %d to %d across %d fuse refusals and one probe: the refusals took from it", path, before, after, len(fused))
		}
	}
}
