package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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

// TestJOB28_ReplayAnswersTheFirstCallsOwnAnswer: an idempotency key is the account's across
// routes (DESIGN 31): sent again on another route, with another model, it answers the first
// call's own answer (its job, its model, its content), never an empty answer made up in the
// later route's shape, and charges nothing. Where the later route's protocol cannot hold the
// first answer (chat and embeddings) the answer keeps the first call's protocol; /v1/embeddings
// answers a chat call's key key_settled naming its job, as /v1/chat answers a job's key.
func TestJOB28_ReplayAnswersTheFirstCallsOwnAnswer(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	content := func(r reply) string {
		t.Helper()
		ch, _ := r.body["choices"].([]any)
		if len(ch) != 1 {
			t.Fatalf("no choice: %d %s", r.status, r.raw)
		}
		m, _ := ch[0].(map[string]any)["message"].(map[string]any)
		s, _ := m["content"].(string)
		return s
	}
	outputText := func(r reply) string {
		out, _ := r.body["output"].([]any)
		if len(out) == 0 {
			return ""
		}
		parts, _ := out[0].(map[string]any)["content"].([]any)
		if len(parts) == 0 {
			return ""
		}
		s, _ := parts[0].(map[string]any)["text"].(string)
		return s
	}
	replayed := func(name string, r reply, jobID string) {
		t.Helper()
		if r.header.Get("Idempotent-Replayed") != "true" || r.header.Get("X-Job-Id") != jobID {
			t.Fatalf("%s: %d Idempotent-Replayed %q X-Job-Id %q, want the first job %s: %s", name, r.status,
				r.header.Get("Idempotent-Replayed"), r.header.Get("X-Job-Id"), jobID, r.raw)
		}
	}

	first := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","messages":[{"role":"user","content":"Tell me about idempotency"}]}`, "Idempotency-Key", "xp-1")
	said, job := content(first), first.header.Get("X-Job-Id")
	if first.status != 200 || said == "" || job == "" {
		t.Fatalf("first chat call: %d %s", first.status, first.raw)
	}
	balance := w.balance(acct)

	r := w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":"other text"}`, "Idempotency-Key", "xp-1")
	replayed("chat key on /compat/v1/embeddings", r, job)
	if r.status != 200 || r.body["object"] != "chat.completion" || r.body["id"] != first.body["id"] || r.body["model"] != "qwen" || content(r) != said {
		t.Fatalf("chat key on /compat/v1/embeddings: %d %s, want the first chat.completion", r.status, r.raw)
	}
	r = w.do("POST", "/compat/v1/responses", key(), `{"model":"kimi","input":"something else"}`, "Idempotency-Key", "xp-1")
	replayed("chat key on /compat/v1/responses", r, job)
	if r.status != 200 || r.body["object"] != "response" || r.body["model"] != "qwen" || outputText(r) != said {
		t.Fatalf("chat key on /compat/v1/responses with kimi: %d %s, want qwen's answer", r.status, r.raw)
	}
	r = w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"kimi","stream":true,"messages":[{"role":"user","content":"x"}]}`, "Idempotency-Key", "xp-1")
	replayed("chat key streamed with kimi", r, job)
	if r.status != 200 || !strings.Contains(r.raw, `"model":"qwen"`) || strings.Contains(r.raw, `"model":"kimi"`) {
		t.Fatalf("chat key streamed with kimi: %d %s, want qwen's chunks", r.status, r.raw)
	}
	r = w.do("POST", "/v1/embeddings", key(), `{"input":"other text","idempotency_key":"xp-1"}`)
	replayed("chat key on /v1/embeddings", r, job)
	if r.status != 409 || r.body["error"] != "key_settled" || r.body["job_id"] != job || r.body["data"] != nil {
		t.Fatalf("chat key on /v1/embeddings: %d %s, want 409 key_settled naming %s", r.status, r.raw, job)
	}

	emb := w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":["alpha beta","gamma"]}`, "Idempotency-Key", "xp-2")
	vectors, _ := emb.body["data"].([]any)
	ejob := emb.header.Get("X-Job-Id")
	if emb.status != 200 || len(vectors) != 2 || ejob == "" {
		t.Fatalf("first embeddings call: %d %s", emb.status, emb.raw)
	}
	balance = w.balance(acct)
	for _, path := range []string{"/compat/v1/chat/completions", "/compat/v1/completions", "/compat/v1/responses"} {
		r := w.do("POST", path, key(), `{"model":"qwen","prompt":"hi","input":"hi","messages":[{"role":"user","content":"hi"}]}`, "Idempotency-Key", "xp-2")
		replayed("embeddings key on "+path, r, ejob)
		got, _ := r.body["data"].([]any)
		if r.status != 200 || r.body["object"] != "list" || r.body["model"] != "embed-small" || len(got) != 2 ||
			fmt.Sprint(got[1].(map[string]any)["embedding"]) != fmt.Sprint(vectors[1].(map[string]any)["embedding"]) {
			t.Fatalf("embeddings key on %s: %d %.400s, want the first embeddings list", path, r.status, r.raw)
		}
	}
	r = w.do("POST", "/v1/embeddings", key(), `{"model":"embed-small","input":"other","idempotency_key":"xp-2"}`)
	if r.status != 200 || r.body["replayed"] != true || r.body["job_id"] != ejob || r.body["model"] != "embed-small" {
		t.Fatalf("embeddings key on /v1/embeddings: %d %.300s", r.status, r.raw)
	}
	r = w.do("POST", "/v1/chat/conversations", key(), `{}`)
	conv, _ := r.body["id"].(string)
	r = w.do("POST", "/v1/chat", key(), `{"conversation_id":"`+conv+`","message":"hi","idempotency_key":"xp-2"}`)
	if r.status != 409 || r.body["error"] != "key_settled" || r.body["job_id"] != ejob {
		t.Fatalf("embeddings key on /v1/chat: %d %s, want 409 key_settled naming %s", r.status, r.raw, ejob)
	}
	if w.balance(acct) != balance {
		t.Fatalf("balance %d, want %d: a replay charges nothing", w.balance(acct), balance)
	}
}
