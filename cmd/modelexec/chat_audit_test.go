package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/server"
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

	if w.balance(acct) != balance {
		t.Fatalf("balance %d, want %d: the chat key's replays charge nothing", w.balance(acct), balance)
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

// failingUpstream is an OpenAI-compatible server that fails as the last message asks: "busy"
// answers 429 with Retry-After: 7; "break" streams part of an answer, then an error event;
// "filter" streams part of an answer, then finish_reason content_filter; "stall" streams part
// of an answer, then holds. Every embeddings call answers 503 with Retry-After: 3.
func failingUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"overloaded"}}`)
			return
		}
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1].Content
		if strings.Contains(last, "busy") {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"too many requests"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{"Hello", " there"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", d)
		}
		w.(http.Flusher).Flush()
		switch {
		case strings.Contains(last, "break"):
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"engine died\"}}\n\n")
		case strings.Contains(last, "filter"):
			fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\ndata: [DONE]\n\n")
		case strings.Contains(last, "stall"):
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newFailingWorld serves qwen (stall ceiling 1 s) and embed-small on failingUpstream.
func newFailingWorld(t *testing.T) *chatWorld {
	srv := failingUpstream(t)
	return newChatWorldWith(t, func(f *catalog.File) {
		for i := range f.LanguageModels {
			if f.LanguageModels[i].Slug == "qwen" {
				f.LanguageModels[i].StallCeilingSeconds = 1
			}
		}
	}, func(c *ServeCmd) {
		c.ReferenceModels = true
		c.OpenAIUpstream = append(c.OpenAIUpstream, "qwen="+srv.URL+"/v1,name=mock-qwen", "embed-small="+srv.URL+"/v1,name=mock-embed")
	})
}

// streamedError is the error object of a stream's error event.
func streamedError(t *testing.T, r reply) map[string]any {
	t.Helper()
	events := sseData(r.raw)
	if r.status != 200 || len(events) == 0 {
		t.Fatalf("stream: %d %s", r.status, r.raw)
	}
	var ev struct {
		Error map[string]any `json:"error"`
	}
	if json.Unmarshal([]byte(events[len(events)-1]), &ev) != nil || ev.Error == nil {
		t.Fatalf("stream ends without an error event: %s", r.raw)
	}
	return ev.Error
}

// TestCHAT11_FailureSaysWhatHappened: a call that fails says what is true of it: a chat model
// that had streamed part of its answer before its upstream broke off or the stall ceiling
// passed stopped partway (not "before answering"); a content filter's stop says so; an
// embeddings call's failure is the embeddings model's; all are refunded.
func TestCHAT11_FailureSaysWhatHappened(t *testing.T) {
	w := newFailingWorld(t)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	before := w.balance(acct)
	for _, c := range []struct{ msg, code, says string }{
		{"break", "chat_start_failed", "stopped partway through its answer"},
		{"stall", "chat_start_failed", "stopped partway through its answer"},
		{"filter", "content_policy", "content filter"},
	} {
		r := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","stream":true,"messages":[{"role":"user","content":"`+c.msg+`"}]}`)
		if !strings.Contains(r.raw, "Hello") {
			t.Fatalf("%s: the part written was not streamed: %s", c.msg, r.raw)
		}
		e := streamedError(t, r)
		msg, _ := e["message"].(string)
		if e["code"] != c.code || !strings.Contains(msg, c.says) || strings.Contains(msg, "before answering") {
			t.Fatalf("%s: error event %v, want %s saying %q", c.msg, e, c.code, c.says)
		}
	}
	r := w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":"x"}`)
	e, _ := r.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if r.status != 500 || compatCode(r) != "chat_start_failed" || !strings.Contains(msg, "embeddings model failed") || strings.Contains(msg, "before answering") {
		t.Fatalf("embeddings failure: %d %s", r.status, r.raw)
	}
	r = w.do("POST", "/v1/embeddings", key(), `{"input":"x"}`)
	if msg, _ := r.body["message"].(string); r.status != 500 || !strings.Contains(msg, "embeddings model failed") {
		t.Fatalf("/v1 embeddings failure: %d %s", r.status, r.raw)
	}
	if w.balance(acct) != before {
		t.Fatalf("balance %d, want %d: every failure is refunded", w.balance(acct), before)
	}
}

// TestCHAT02_BusyUpstreamLetsTheClientRetry: an upstream that answers 429 or 503 fails the call
// refunded, and the answer lets an OpenAI client retry: no x-should-retry: false, and the
// upstream's Retry-After passed on, since a resend is a new call. With an Idempotency-Key
// sent, a resend replays the failure, so x-should-retry: false stays.
func TestCHAT02_BusyUpstreamLetsTheClientRetry(t *testing.T) {
	w := newFailingWorld(t)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	before := w.balance(acct)
	r := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","messages":[{"role":"user","content":"busy"}]}`)
	if r.status != 500 || compatCode(r) != "chat_start_failed" || r.header.Get("x-should-retry") == "false" || r.header.Get("Retry-After") != "7" {
		t.Fatalf("busy upstream: %d x-should-retry %q Retry-After %q %s, want a retry after 7 s", r.status,
			r.header.Get("x-should-retry"), r.header.Get("Retry-After"), r.raw)
	}
	r = w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":"x"}`)
	if r.status != 500 || r.header.Get("x-should-retry") == "false" || r.header.Get("Retry-After") != "3" {
		t.Fatalf("busy embeddings upstream: %d x-should-retry %q Retry-After %q %s", r.status,
			r.header.Get("x-should-retry"), r.header.Get("Retry-After"), r.raw)
	}
	r = w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","messages":[{"role":"user","content":"busy"}]}`, "Idempotency-Key", "busy-1")
	if r.status != 500 || r.header.Get("x-should-retry") != "false" {
		t.Fatalf("busy upstream under a key: %d x-should-retry %q, want false: a resend replays the failure", r.status, r.header.Get("x-should-retry"))
	}
	if w.balance(acct) != before {
		t.Fatalf("balance %d, want %d: nothing is charged", w.balance(acct), before)
	}
}

// TestCHAT02_RefusalsKeepWhatAPersonNeeds: on /compat/v1 the envelope's message says what the
// service's own fields say (insufficient_scope: the scope required, the others accepted, the
// key's; plan_has_no_chat: the plan), and param names the field a refusal is about: the
// conversation over the context window is messages, a message too long its own content.
func TestCHAT02_RefusalsKeepWhatAPersonNeeds(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	message := func(r reply) (string, any) {
		e, _ := r.body["error"].(map[string]any)
		m, _ := e["message"].(string)
		return m, e["param"]
	}
	r := w.do("POST", "/compat/v1/chat/completions", w.key(acct, []auth.Scope{auth.EmbeddingsWrite}, nil), `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)
	if m, _ := message(r); r.status != 403 || compatCode(r) != "insufficient_scope" ||
		!strings.Contains(m, "text:write") || !strings.Contains(m, "chat:write") || !strings.Contains(m, "embeddings:write") {
		t.Fatalf("scope: %d %s, want the message to name text:write, chat:write and the key's embeddings:write", r.status, r.raw)
	}
	free := w.account(auth.Free, 100)
	r = w.do("POST", "/compat/v1/chat/completions", w.key(free, nil, nil), `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)
	if m, _ := message(r); r.status != 403 || compatCode(r) != "plan_has_no_chat" || !strings.Contains(m, "free") {
		t.Fatalf("free plan: %d %s, want the message to name the plan", r.status, r.raw)
	}

	long := strings.Repeat("a ", 11999)
	window := `{"model":"qwen","messages":[{"role":"user","content":"` + long + `"},{"role":"assistant","content":"` + long + `"},{"role":"user","content":"` + long + `"}]}`
	r = w.do("POST", "/compat/v1/chat/completions", key(), window)
	if _, p := message(r); r.status != 400 || compatCode(r) != "input_too_long" || p != "messages" {
		t.Fatalf("over the context window: %d %.300s, want input_too_long param messages", r.status, r.raw)
	}
	tooLong := `{"model":"qwen","messages":[{"role":"user","content":"hi"},{"role":"user","content":"` + strings.Repeat("b", 24001) + `"}]}`
	r = w.do("POST", "/compat/v1/chat/completions", key(), tooLong)
	if _, p := message(r); r.status != 400 || compatCode(r) != "text_too_long" || p != "messages[1].content" {
		t.Fatalf("a message too long: %d %.300s, want text_too_long param messages[1].content", r.status, r.raw)
	}
	r = w.do("POST", "/compat/v1/responses", key(), `{"model":"qwen","instructions":"be brief","input":[{"role":"user","content":"hi"},{"role":"user","content":"`+strings.Repeat("b", 24001)+`"}]}`)
	if _, p := message(r); r.status != 400 || compatCode(r) != "text_too_long" || p != "input[1].content" {
		t.Fatalf("responses, an input item too long: %d %.300s, want param input[1].content", r.status, r.raw)
	}
	r = w.do("POST", "/compat/v1/completions", key(), `{"model":"qwen","prompt":"`+strings.Repeat("b", 24001)+`"}`)
	if _, p := message(r); r.status != 400 || compatCode(r) != "text_too_long" || p != "prompt" {
		t.Fatalf("completions, a prompt too long: %d %.300s, want param prompt", r.status, r.raw)
	}
}

// TestJOB28_ImageKeyOnCompatNamesItsJob: a key an image job holds (DESIGN 31) sent to
// /compat/v1 answers 409 key_settled naming that job, with Idempotent-Replayed: true: the
// protocol cannot show an image job's answer, and never makes up an empty one; nothing runs
// or is charged again.
func TestJOB28_ImageKeyOnCompatNamesItsJob(t *testing.T) {
	w := newChatWorldWith(t, func(f *catalog.File) {
		for i := range f.Models {
			if f.Models[i].Slug == "image-4b" {
				f.Models[i].Runner = "noop"
			}
		}
	}, func(c *ServeCmd) { c.ReferenceModels, c.Roles = true, "api,queue,worker" })
	queue := httptest.NewServer(w.app.Handler(server.RoleQueue))
	t.Cleanup(queue.Close)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 4)
	req, _ := http.NewRequest("POST", queue.URL+"/svc-serverless/image-4b?wait=10", strings.NewReader(`{"positivePrompt":"a lighthouse"}`))
	req.Header.Set("Authorization", "Bearer "+key())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "img-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var first map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&first)
	resp.Body.Close()
	if resp.StatusCode != 200 || first["status"] != "COMPLETED" {
		t.Fatalf("image job: %d %v", resp.StatusCode, first)
	}
	balance := w.balance(acct)
	for _, c := range []struct{ path, body string }{
		{"/compat/v1/chat/completions", `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`},
		{"/compat/v1/embeddings", `{"model":"embed-small","input":"hi"}`},
	} {
		r := w.do("POST", c.path, key(), c.body, "Idempotency-Key", "img-1")
		e, _ := r.body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if r.status != 409 || compatCode(r) != "key_settled" || r.header.Get("Idempotent-Replayed") != "true" ||
			!strings.HasPrefix(r.header.Get("X-Job-Id"), "photo_") || !strings.Contains(msg, r.header.Get("X-Job-Id")) {
			t.Fatalf("image key on %s: %d %v %s, want 409 key_settled naming the photo job", c.path, r.status, r.header, r.raw)
		}
	}
	if w.balance(acct) != balance {
		t.Fatalf("balance %d, want %d", w.balance(acct), balance)
	}
}
