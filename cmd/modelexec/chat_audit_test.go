package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
