package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// chatWorld is the wired service over HTTP with a mock OpenAI upstream behind kimi.
type chatWorld struct {
	t        *testing.T
	api      *httptest.Server
	db       *sqlstore.DB
	auth     *auth.Service
	upstream *mockUpstream
	app      *server.Server // the other hosts of the roles served
}

// mockUpstream speaks the chat completions protocol and behaves by the last message: "block"
// holds until released, "fail" answers 500, "unparseable" answers 400, "garbled" answers 200
// outside the protocol, "whole" answers one JSON object even when asked to stream; anything else
// answers "Hello from upstream", streamed when asked, as one chat.completion otherwise.
type mockUpstream struct {
	srv      *httptest.Server
	release  chan struct{}
	started  chan struct{}
	once     sync.Once
	streamed atomic.Bool  // whether the last request asked for a stream
	body     atomic.Value // the last request's body ([]byte)
}

func newMockUpstream(t *testing.T) *mockUpstream {
	m := &mockUpstream{release: make(chan struct{}), started: make(chan struct{}, 10)}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
			Stream   bool                       `json:"stream"`
		}
		raw, _ := io.ReadAll(r.Body)
		m.body.Store(raw)
		_ = json.Unmarshal(raw, &req)
		m.streamed.Store(req.Stream)
		last := req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.Contains(last, "block"):
			m.started <- struct{}{}
			select {
			case <-m.release:
			case <-r.Context().Done():
				return
			}
		case strings.Contains(last, "fail"):
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"engine crashed"}}`)
			return
		case strings.Contains(last, "unparseable"):
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"could not parse the chat template","code":"invalid_request"}}`)
			return
		case strings.Contains(last, "garbled"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>502 Bad Gateway</body></html>")
			return
		case strings.Contains(last, "call a tool"):
			writeToolCall(w, req.Stream)
			return
		}
		if !req.Stream || strings.Contains(last, "whole") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"mock-kimi","choices":[{"index":0,`+
				`"message":{"role":"assistant","content":"Hello from upstream"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{"Hello", " from", " upstream"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", d)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(func() { m.Release(); m.srv.Close() })
	return m
}

func (m *mockUpstream) Release() { m.once.Do(func() { close(m.release) }) }

// writeToolCall answers a call of get_weather({"city":"Paris"}): one chat.completion, or a
// stream giving the call in pieces (its arguments split across chunks) as servers do.
func writeToolCall(w http.ResponseWriter, stream bool) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",`+
			`"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":9}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, d := range []string{
		`{"choices":[{"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9}}`,
	} {
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// newChatWorld serves the API with the shipped catalogue, the reference models on, kimi on the
// mock upstream, and edit applied to the catalogue file first (nil: as shipped).
func newChatWorld(t *testing.T, edit func(f *catalog.File)) *chatWorld {
	t.Helper()
	return newChatWorldWith(t, edit, func(c *ServeCmd) { c.ReferenceModels = true })
}

// newChatWorldWith is newChatWorld with flags set by flags (after kimi's upstream is named).
func newChatWorldWith(t *testing.T, edit func(f *catalog.File), flags func(c *ServeCmd)) *chatWorld {
	t.Helper()
	w := &chatWorld{t: t, upstream: newMockUpstream(t)}
	c := &ServeCmd{Roles: "api,worker", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	c.Data, c.Secret = migratedData(t), "chat-e2e-secret-0123456789"
	c.OpenAIUpstream = []string{"kimi=" + w.upstream.srv.URL + "/v1,key=sk-mock,name=mock-kimi"}
	flags(c)
	if edit != nil {
		var f catalog.File
		if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
			t.Fatal(err)
		}
		edit(&f)
		b, _ := json.Marshal(f)
		c.Catalogue = filepath.Join(t.TempDir(), "catalogue.json")
		if err := os.WriteFile(c.Catalogue, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	db, err := c.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := c.authService(db, false, log, utcNow)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.buildWith(ctx, db, svc, log, lowCost)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	w.api = httptest.NewServer(a.Handler(server.RoleAPI))
	t.Cleanup(w.api.Close)
	w.db, w.auth, w.app = db, svc, a
	return w
}

// account creates an account and answers its id.
func (w *chatWorld) account(plan auth.Plan, balance int64) string {
	w.t.Helper()
	id := auth.NewID("acct_")
	now := utcNow()
	if err := w.db.CreateAccount(context.Background(), auth.Account{ID: id, Plan: plan, Status: auth.Live, Balance: balance,
		MonthlyAllowance: auth.DefaultMonthlyAllowance(plan), AllowancePeriod: auth.Period(now), CreatedAt: now.Add(-72 * time.Hour)}); err != nil {
		w.t.Fatal(err)
	}
	return id
}

// key mints a key (nil scopes: the ticked set).
func (w *chatWorld) key(account string, scopes []auth.Scope, ceiling *auth.CeilingRequest) string {
	w.t.Helper()
	m, err := w.auth.Mint(context.Background(), auth.MintParams{AccountID: account, Scopes: scopes, Ceiling: ceiling})
	if err != nil {
		w.t.Fatal(err)
	}
	return m.Key
}

// pool mints n keys (ticked scopes) and answers them in turn: the per-instance fuse admits
// 5 interactive requests a second per key, and these tests send more than that.
func (w *chatWorld) pool(account string, n int) func() string {
	w.t.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = w.key(account, nil, nil)
	}
	i := 0
	return func() string {
		i++
		return keys[i%n]
	}
}

func (w *chatWorld) balance(account string) int64 {
	w.t.Helper()
	a, err := w.db.Account(context.Background(), account)
	if err != nil {
		w.t.Fatal(err)
	}
	return a.Balance
}

func (w *chatWorld) events(account string) int {
	w.t.Helper()
	var n int
	if err := w.db.SQL().QueryRow(`SELECT COUNT(*) FROM events WHERE account_id = $1`, account).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (w *chatWorld) do(method, path, key, body string, headers ...string) reply {
	w.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, w.api.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r
}

// events of an SSE body: the data lines.
func sseData(raw string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func compatCode(r reply) string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// job reads a job with a jobs:read key.
func (w *chatWorld) job(key, id string) map[string]any {
	w.t.Helper()
	r := w.do("GET", "/v1/jobs/"+id, key, "")
	if r.status != 200 {
		w.t.Fatalf("GET /v1/jobs/%s: %d %s", id, r.status, r.raw)
	}
	return r.body
}

// TestCHAT01_CompatSurface walks /compat/v1 with the reference models: every call is a job,
// charged once, settled to the tokens used and never above its quote, sending no event.
func TestCHAT01_CompatSurface(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)

	r := w.do("GET", "/compat/v1/models", key(), "")
	if r.status != 200 || r.body["object"] != "list" || len(r.body["data"].([]any)) != 3 {
		t.Fatalf("models: %d %s", r.status, r.raw)
	}

	before := w.balance(acct)
	r = w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","messages":[{"role":"user","content":"What is a deterministic answer?"}]}`)
	if r.status != 200 || r.body["object"] != "chat.completion" {
		t.Fatalf("chat: %d %s", r.status, r.raw)
	}
	jobID := r.header.Get("X-Job-Id")
	j := w.job(key(), jobID)
	quoted, charged := num(j["credits_quoted"]), num(j["credits_charged"])
	if j["product"] != "chat" || charged <= 0 || charged >= quoted || w.balance(acct) != before-charged {
		t.Fatalf("job %v: quoted %d charged %d, balance %d → %d", j["product"], quoted, charged, before, w.balance(acct))
	}
	usage := r.body["usage"].(map[string]any)
	if num(usage["total_tokens"]) != num(usage["prompt_tokens"])+num(usage["completion_tokens"]) || num(usage["completion_tokens"]) == 0 {
		t.Fatalf("usage %v", usage)
	}

	// Streamed, with usage in the last chunk before [DONE].
	before = w.balance(acct)
	r = w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","messages":[{"role":"user","content":"Stream it"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":50}`)
	data := sseData(r.raw)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream: %d %s", r.status, r.raw)
	}
	var text strings.Builder
	var last map[string]any
	for _, d := range data[:len(data)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %q: %v", d, err)
		}
		for _, ch := range c["choices"].([]any) {
			if s, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
				text.WriteString(s)
			}
		}
		last = c
	}
	if last["usage"] == nil || len(data) < 5 || !strings.Contains(text.String(), "reference model") {
		t.Fatalf("stream chunks %d, text %q, last %v", len(data), text.String(), last)
	}
	if got := before - w.balance(acct); got != num(w.job(key(), r.header.Get("X-Job-Id"))["credits_charged"]) || got <= 0 {
		t.Fatalf("stream charged %d", got)
	}

	r = w.do("POST", "/compat/v1/completions", key(), `{"model":"kimi","prompt":"Say hello"}`)
	if r.status != 200 || r.body["object"] != "text_completion" || r.body["choices"].([]any)[0].(map[string]any)["text"] != "Hello from upstream" {
		t.Fatalf("completions: %d %s", r.status, r.raw)
	}
	if w.upstream.streamed.Load() {
		t.Fatal("a call that does not stream asked the upstream for a stream")
	}
	// The upstream's own token counts settle the charge: 12 in, 3 out at kimi's 3 and 12 per 1,000.
	if j := w.job(key(), r.header.Get("X-Job-Id")); num(j["credits_charged"]) != 1 || num(j["credits_quoted"]) <= 1 {
		t.Fatalf("kimi job %v", j)
	}
	// A call that streams is streamed from the upstream piece by piece; an upstream that answers
	// a stream with one whole object is passed on all the same, charged the same.
	for _, c := range []struct {
		msg    string
		pieces int
	}{{"Say hello", 3}, {"Say hello whole", 1}} {
		before := w.balance(acct)
		r = w.do("POST", "/compat/v1/chat/completions", key(), fmt.Sprintf(`{"model":"kimi","messages":[{"role":"user","content":%q}],"stream":true}`, c.msg))
		var pieces []string
		for _, d := range sseData(r.raw) {
			var ch struct {
				Choices []struct {
					Delta struct{ Content string } `json:"delta"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(d), &ch) == nil && len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				pieces = append(pieces, ch.Choices[0].Delta.Content)
			}
		}
		if r.status != 200 || strings.Join(pieces, "") != "Hello from upstream" || len(pieces) != c.pieces || !strings.HasSuffix(r.raw, "data: [DONE]\n\n") {
			t.Fatalf("kimi stream %q: %d pieces %q, %s", c.msg, r.status, pieces, r.raw)
		}
		if got := before - w.balance(acct); got != 1 || !w.upstream.streamed.Load() {
			t.Fatalf("kimi stream %q charged %d, want the upstream's counts (1); asked for a stream: %v", c.msg, got, w.upstream.streamed.Load())
		}
	}

	r = w.do("POST", "/compat/v1/responses", key(), `{"model":"qwen","input":"Summarise this","instructions":"Be brief"}`)
	out, _ := r.body["output"].([]any)
	if r.status != 200 || r.body["object"] != "response" || r.body["status"] != "completed" || len(out) != 1 {
		t.Fatalf("responses: %d %s", r.status, r.raw)
	}

	r = w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":["the cat sat","a cat sat down","stock prices fell"]}`)
	if r.status != 200 || len(r.body["data"].([]any)) != 3 {
		t.Fatalf("embeddings: %d %s", r.status, r.raw)
	}
	vec := func(i int) []float64 {
		var v []float64
		for _, x := range r.body["data"].([]any)[i].(map[string]any)["embedding"].([]any) {
			v = append(v, x.(float64))
		}
		return v
	}
	dot := func(a, b []float64) (s float64) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	if a, b, c := vec(0), vec(1), vec(2); len(a) != 256 || dot(a, b) <= dot(a, c) {
		t.Fatalf("similar %.3f unrelated %.3f (len %d)", dot(a, b), dot(a, c), len(a))
	}
	r = w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":"one","encoding_format":"base64"}`)
	b64, _ := r.body["data"].([]any)[0].(map[string]any)["embedding"].(string)
	if raw, err := base64.StdEncoding.DecodeString(b64); err != nil || len(raw) != 4*256 {
		t.Fatalf("base64 embedding: %v, %d bytes", err, len(raw))
	}

	// Chat turns send no event; embeddings are ordinary jobs and do.
	var chatEvents int
	if err := w.db.SQL().QueryRow(`SELECT COUNT(*) FROM events WHERE account_id = $1 AND product = 'chat'`, acct).Scan(&chatEvents); err != nil || chatEvents != 0 {
		t.Fatalf("chat events %d (%v)", chatEvents, err)
	}
}

// TestCHAT02_CompatErrorMapping proves ERR-18..ERR-24 on /compat/v1, with the balance
// unchanged around every refusal.
func TestCHAT02_CompatErrorMapping(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	chatBody := func(model, msg string, extra string) string {
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]%s}`, model, msg, extra)
	}
	check := func(name string, r reply, status int, code string) {
		t.Helper()
		e, _ := r.body["error"].(map[string]any)
		if r.status != status || compatCode(r) != code || e["message"] == "" || e["type"] == nil {
			t.Fatalf("%s: %d %s, want %d %s", name, r.status, r.raw, status, code)
		}
		if _, ok := e["detail"]; ok || r.body["detail"] != nil {
			t.Fatalf("%s: compat errors carry no detail: %s", name, r.raw)
		}
	}
	before := w.balance(acct)

	// ERR-18: an empty wallet is 429 insufficient_quota, and the client is told not to retry.
	poor := w.account(auth.Ultimate, 0)
	r := w.do("POST", "/compat/v1/chat/completions", w.key(poor, nil, nil), chatBody("qwen", "hi", ""))
	check("empty wallet", r, 429, "insufficient_quota")
	if r.header.Get("x-should-retry") != "false" || r.body["error"].(map[string]any)["type"] != "insufficient_quota" {
		t.Fatalf("insufficient_quota headers %v body %s", r.header, r.raw)
	}
	// ERR-18: a spent key ceiling too.
	capped := w.key(acct, nil, &auth.CeilingRequest{Amount: 1})
	check("key ceiling", w.do("POST", "/compat/v1/chat/completions", capped, chatBody("qwen", "hi", "")), 429, "insufficient_quota")

	// ERR-20: output_limit_reached is 400.
	check("output limit", w.do("POST", "/compat/v1/chat/completions", key(), chatBody("qwen", "hi", `,"max_tokens":100000`)), 400, "output_limit_reached")
	// The refusals of a field name it in param.
	for _, c := range []struct{ body, code, param string }{
		{chatBody("qwen", "hi", `,"max_tokens":0`), "invalid_body", "max_tokens"},
		{chatBody("qwen", "hi", `,"max_completion_tokens":-1`), "invalid_body", "max_completion_tokens"},
		// Numbers of the right kind past what the field holds say so (they were "must be a whole
		// number, not number 1e20").
		{chatBody("qwen", "hi", `,"max_tokens":999999e99999`), "invalid_body", "max_tokens"},
		{chatBody("qwen", "hi", `,"seed":99999999999999999999`), "invalid_body", "seed"},
		{chatBody("qwen", "hi", `,"temperature":99999e999`), "invalid_body", "temperature"},
		{chatBody("qwen", "hi", `,"seed":1.5e99999999999`), "invalid_body", "seed"},
		{chatBody("qwen", strings.Repeat("long ", 30000), ""), "text_too_long", "messages[0].content"},
	} {
		r := w.do("POST", "/compat/v1/chat/completions", key(), c.body)
		if e, _ := r.body["error"].(map[string]any); r.status != 400 || compatCode(r) != c.code || e["param"] != c.param ||
			strings.Contains(c.body, "99999") && !strings.Contains(r.raw, "is out of range") {
			t.Fatalf("%s: %d %.300s, want 400 %s naming %s", c.code, r.status, r.raw, c.code, c.param)
		}
	}
	// The Responses protocol's refusals name its own fields, in param and in the message: the
	// checks it shares with Chat Completions named max_tokens and reasoning_effort, fields its
	// caller never sent.
	for _, c := range []struct{ body, code, param string }{
		{`{"model":"kimi","input":"hi","max_output_tokens":0}`, "invalid_body", "max_output_tokens"},
		{`{"model":"kimi","input":"hi","max_output_tokens":99999999}`, "output_limit_reached", "max_output_tokens"},
		{`{"model":"kimi","input":"hi","reasoning":{"effort":"ultra"}}`, "unknown_effort", "reasoning.effort"},
		{`{"model":"qwen","input":"` + strings.Repeat("long ", 30000) + `"}`, "text_too_long", "input"},
		{`{"model":"qwen","instructions":"be brief","input":[{"role":"user","content":"hi"},{"role":"user","content":"` +
			strings.Repeat("long ", 30000) + `"}]}`, "text_too_long", "input[1].content"},
	} {
		r := w.do("POST", "/compat/v1/responses", key(), c.body)
		e, _ := r.body["error"].(map[string]any)
		if msg, _ := e["message"].(string); r.status != 400 || compatCode(r) != c.code || e["param"] != c.param ||
			strings.Contains(msg, "max_tokens") || strings.Contains(msg, "reasoning_effort") || strings.Contains(msg, "messages") ||
			strings.Contains(c.body, "instructions") && !strings.Contains(msg, "input[1] is") {
			t.Fatalf("responses %s: %d %.300s, want 400 %s naming %s", c.code, r.status, r.raw, c.code, c.param)
		}
	}
	// ERR-22: the model's own refusal is 400, refunded.
	check("model refusal", w.do("POST", "/compat/v1/chat/completions", key(), chatBody("qwen", "[refuse] please", "")), 400, "content_policy")
	// ERR-21: the language model's parser refusal is 422 without detail, refunded.
	check("parser refusal", w.do("POST", "/compat/v1/chat/completions", key(), chatBody("kimi", "unparseable", "")), 422, "invalid_input")
	// A failed run is chat_start_failed, refunded; so is a 200 outside the protocol, never an
	// empty success, whether the call streams or not.
	check("upstream failure", w.do("POST", "/compat/v1/chat/completions", key(), chatBody("kimi", "fail", "")), 500, "chat_start_failed")
	// A failure answered after its job exists names the job, and its replay says it is one.
	k := key()
	first := w.do("POST", "/compat/v1/chat/completions", k, chatBody("kimi", "fail", ""), "Idempotency-Key", "fails-once")
	check("keyed upstream failure", first, 500, "chat_start_failed")
	replay := w.do("POST", "/compat/v1/chat/completions", k, chatBody("kimi", "fail", ""), "Idempotency-Key", "fails-once")
	check("its replay", replay, 500, "chat_start_failed")
	if id := first.header.Get("X-Job-Id"); id == "" || replay.header.Get("X-Job-Id") != id || replay.header.Get("Idempotent-Replayed") != "true" ||
		first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("failure headers: first %v, replay %v", first.header, replay.header)
	}
	check("upstream protocol error", w.do("POST", "/compat/v1/chat/completions", key(), chatBody("kimi", "garbled", "")), 500, "chat_start_failed")
	r = w.do("POST", "/compat/v1/chat/completions", key(), chatBody("kimi", "garbled", `,"stream":true`))
	if data := sseData(r.raw); r.status != 200 || len(data) == 0 || !strings.Contains(data[len(data)-1], `"code":"chat_start_failed"`) || strings.Contains(r.raw, "[DONE]") {
		t.Fatalf("streamed protocol error: %d %s", r.status, r.raw)
	}
	// Request refusals.
	check("unknown model", w.do("POST", "/compat/v1/chat/completions", key(), chatBody("gpt-4o", "hi", "")), 400, "unknown_model")
	check("unknown effort", w.do("POST", "/compat/v1/chat/completions", key(), chatBody("qwen", "hi", `,"reasoning_effort":"extreme"`)), 400, "unknown_effort")
	check("not json", w.do("POST", "/compat/v1/chat/completions", key(), `{`), 400, "invalid_json")
	check("no auth", w.do("POST", "/compat/v1/chat/completions", "", chatBody("qwen", "hi", "")), 401, "missing_authorization")
	check("bad key", w.do("POST", "/compat/v1/chat/completions", "svc_sk_nope", chatBody("qwen", "hi", "")), 401, "invalid_api_key")
	check("unknown path", w.do("GET", "/compat/v1/nope", key(), ""), 404, "not_found")
	check("embeddings input", w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":[1,2]}`), 400, "input_invalid")
	noEmbed := w.key(acct, []auth.Scope{auth.TextWrite}, nil)
	check("embeddings scope", w.do("POST", "/compat/v1/embeddings", noEmbed, `{"model":"embed-small","input":"x"}`), 403, "insufficient_scope")
	if got := w.balance(acct); got != before {
		t.Fatalf("refusals moved the balance %d → %d", before, got)
	}
	if w.balance(poor) != 0 {
		t.Fatal("the empty wallet was charged")
	}

	// ERR-23: a refusal after the streamed 200 arrives inside the stream.
	r = w.do("POST", "/compat/v1/chat/completions", key(), chatBody("qwen", "[refuse] streamed", `,"stream":true`))
	data := sseData(r.raw)
	if r.status != 200 || len(data) == 0 || !strings.Contains(data[len(data)-1], `"code":"content_policy"`) || strings.Contains(r.raw, "[DONE]") {
		t.Fatalf("streamed refusal: %d %s", r.status, r.raw)
	}
	if got := w.balance(acct); got != before {
		t.Fatalf("streamed refusal charged: %d → %d", before, got)
	}

	// ERR-24: a key outside the alphabet is folded into it; the same key replays, charged once.
	odd := "my key/with spaces & ünïcode, and more than sixty-four characters in all of it"
	r1 := w.do("POST", "/compat/v1/chat/completions", key(), chatBody("qwen", "fold me", ""), "Idempotency-Key", odd)
	mid := w.balance(acct)
	r2 := w.do("POST", "/compat/v1/chat/completions", key(), chatBody("qwen", "fold me", ""), "Idempotency-Key", odd)
	if r1.status != 200 || r2.status != 200 || r2.header.Get("Idempotent-Replayed") != "true" || r1.body["id"] != r2.body["id"] || w.balance(acct) != mid || mid >= before {
		t.Fatalf("folded key: %d %d replayed=%q ids %v %v balance %d %d %d", r1.status, r2.status, r2.header.Get("Idempotent-Replayed"), r1.body["id"], r2.body["id"], before, mid, w.balance(acct))
	}
}

// TestCHAT03_ConversationsAndTurns walks /v1/chat and /v1/chat/conversations and every
// conversation code, with the balance around each.
func TestCHAT03_ConversationsAndTurns(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8) // ticked scopes: text:write, no chat:read
	reader := w.key(acct, []auth.Scope{auth.ChatRead, auth.JobsRead}, nil)
	code := func(r reply) string { s, _ := r.body["error"].(string); return s }
	expect := func(name string, r reply, status int, c string) {
		t.Helper()
		if r.status != status || code(r) != c {
			t.Fatalf("%s: %d %s, want %d %s", name, r.status, r.raw, status, c)
		}
	}
	before := w.balance(acct)

	expect("title too long", w.do("POST", "/v1/chat/conversations", key(), fmt.Sprintf(`{"title":%q}`, strings.Repeat("t", 201))), 400, "invalid_title")
	r := w.do("POST", "/v1/chat/conversations", key(), `{"title":"Planning"}`)
	if r.status != 201 || r.body["object"] != "chat.conversation" {
		t.Fatalf("open: %d %s", r.status, r.raw)
	}
	conv := r.body["id"].(string)
	turn := func(k, fields string) reply {
		return w.do("POST", "/v1/chat", k, `{"conversation_id":"`+conv+`"`+fields+`}`)
	}
	expect("no conversation", w.do("POST", "/v1/chat", key(), `{"message":"hi"}`), 400, "conversation_required")
	expect("unknown conversation", w.do("POST", "/v1/chat", key(), `{"conversation_id":"conv_nope","message":"hi"}`), 404, "conversation_not_found")
	expect("unknown model", turn(key(), `,"message":"hi","model":"gpt"`), 400, "unknown_model")
	expect("unknown effort", turn(key(), `,"message":"hi","effort":"max"`), 400, "unknown_effort")
	expect("message too long", turn(key(), `,"message":"`+strings.Repeat("a", 24001)+`"`), 400, "text_too_long")
	expect("bad key", turn(key(), `,"message":"hi","idempotency_key":"no spaces allowed"`), 400, "invalid_idempotency_key")
	if got := w.balance(acct); got != before {
		t.Fatalf("refusals charged: %d → %d", before, got)
	}

	r = turn(key(), `,"message":"Hello there","effort":"light","idempotency_key":"turn-1"`)
	turnJob, _ := r.body["job_id"].(string)
	if r.status != 200 || r.body["object"] != "chat.turn" || !strings.HasPrefix(turnJob, "chat_") || strings.Contains(turnJob, "turn-1") {
		t.Fatalf("turn: %d %s", r.status, r.raw)
	}
	charged, quoted := num(r.body["credits_charged"]), num(r.body["credits_quoted"])
	if charged <= 0 || charged > quoted || w.balance(acct) != before-charged {
		t.Fatalf("turn charged %d of %d, balance %d → %d", charged, quoted, before, w.balance(acct))
	}
	msgID := r.body["id"].(string)
	after := w.balance(acct)
	// A resend of a settled key: key_settled naming the message, nothing charged.
	r = turn(key(), `,"message":"Hello there","idempotency_key":"turn-1"`)
	expect("resend", r, 409, "key_settled")
	if r.body["message_id"] != msgID || r.body["job_id"] != turnJob || r.body["charged"] != "stands" || w.balance(acct) != after {
		t.Fatalf("key_settled %s, balance %d → %d", r.raw, after, w.balance(acct))
	}
	// The turn is a job; it sent no event.
	if j := w.job(reader, turnJob); j["product"] != "chat" || num(j["credits_charged"]) != charged {
		t.Fatalf("job %v", j)
	}
	if n := w.events(acct); n != 0 {
		t.Fatalf("chat turn created %d events", n)
	}

	// Streamed turn on the mock upstream; in_flight while it runs.
	done := make(chan reply, 1)
	go func() {
		done <- turn(key(), `,"message":"please block","model":"kimi","stream":true,"idempotency_key":"turn-2"`)
	}()
	<-w.upstream.started
	r = turn(key(), `,"message":"please block","model":"kimi","idempotency_key":"turn-2"`)
	expect("in flight", r, 409, "in_flight")
	if r.body["message_id"] == nil || r.body["job_id"] == nil {
		t.Fatalf("in_flight without message_id or job_id: %s", r.raw)
	}
	w.upstream.Release()
	r = <-done
	data := sseData(r.raw)
	if r.status != 200 || len(data) < 3 || data[len(data)-1] != "[DONE]" || !strings.Contains(data[len(data)-2], `"object":"chat.turn"`) {
		t.Fatalf("streamed turn: %d %s", r.status, r.raw)
	}

	// A turn whose run fails: chat_start_failed, charge reversed.
	mid := w.balance(acct)
	expect("run failed", turn(key(), `,"message":"fail now","model":"kimi"`), 500, "chat_start_failed")
	if w.balance(acct) != mid {
		t.Fatalf("failed turn charged: %d → %d", mid, w.balance(acct))
	}

	// A turn refused before its job was written leaves no trace: the thread reads as before and
	// the same key, resent once the cause is fixed, runs the turn.
	r = turn(key(), `,"message":"Hello again","model":"kimi","max_tokens":999999,"idempotency_key":"turn-3"`)
	expect("output limit", r, 400, "output_limit_reached")
	if r.body["charged"] != "no" {
		t.Fatalf("refused turn: %s", r.raw)
	}
	if r = w.do("GET", "/v1/chat/conversations/"+conv, reader, ""); len(r.body["messages"].([]any)) != 6 {
		t.Fatalf("a refused turn wrote to the thread: %s", r.raw)
	}
	if r = turn(key(), `,"message":"Hello again","model":"kimi","idempotency_key":"turn-3"`); r.status != 200 || r.body["object"] != "chat.turn" {
		t.Fatalf("the refused turn's key, resent: %d %s", r.status, r.raw)
	}
	// A turn that failed after its charge keeps its key: the failure says a retry takes a new
	// key, and a resend of the key is key_settled telling that the first turn was refunded.
	mid = w.balance(acct)
	r = turn(key(), `,"message":"fail now","model":"kimi","idempotency_key":"turn-4"`)
	expect("run failed, keyed", r, 500, "chat_start_failed")
	if r.body["retry"] != "new_key" || r.body["charged"] != "refunded" {
		t.Fatalf("failed turn: %s", r.raw)
	}
	r = turn(key(), `,"message":"fail now","model":"kimi","idempotency_key":"turn-4"`)
	expect("failed turn's key, resent", r, 409, "key_settled")
	if r.body["charged"] != "refunded" || r.body["message_id"] == nil || w.balance(acct) != mid {
		t.Fatalf("key_settled after a refunded turn: %s, balance %d → %d", r.raw, mid, w.balance(acct))
	}

	// Threads are read back with chat:read only.
	expect("text:write reads", w.do("GET", "/v1/chat/conversations/"+conv, key(), ""), 403, "insufficient_scope")
	r = w.do("GET", "/v1/chat/conversations/"+conv, reader, "")
	msgs, _ := r.body["messages"].([]any)
	if r.status != 200 || len(msgs) != 10 {
		t.Fatalf("thread: %d %s", r.status, r.raw)
	}
	if m := msgs[3].(map[string]any); m["content"] != "Hello from upstream" || m["status"] != "complete" {
		t.Fatalf("streamed turn's message %v", m)
	}
	for _, i := range []int{5, 9} {
		if m := msgs[i].(map[string]any); m["status"] != "failed" {
			t.Fatalf("failed turn's message %v", m)
		}
	}
	if m := msgs[7].(map[string]any); m["status"] != "complete" {
		t.Fatalf("the resent turn's message %v", m)
	}
	r = w.do("GET", "/v1/chat/conversations", reader, "")
	if r.status != 200 || len(r.body["data"].([]any)) != 1 {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	if n := w.events(acct); n != 0 {
		t.Fatalf("chat turns created %d events", n)
	}
}

// TestCHAT04_Embeddings walks /v1/embeddings and its codes.
func TestCHAT04_Embeddings(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.pool(acct, 8)
	before := w.balance(acct)
	for _, c := range []struct{ body, code string }{
		{`{}`, "input_required"},
		{`{"input":[]}`, "input_required"},
		{`{"input":["ok", 3]}`, "input_invalid"},
		{`{"input":["` + strings.Repeat("長", 8193) + `"]}`, "input_too_long"},
		{`{"input":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 2049), ",") + `]}`, "input_too_many"},
		{`{"model":"qwen","input":"x"}`, "unknown_model"},
	} {
		r := w.do("POST", "/v1/embeddings", key(), c.body)
		if r.status != 400 || r.body["error"] != c.code {
			t.Fatalf("%.60s: %d %s, want 400 %s", c.body, r.status, r.raw, c.code)
		}
	}
	if w.balance(acct) != before {
		t.Fatal("refused embeddings charged")
	}
	r := w.do("POST", "/v1/embeddings", key(), `{"input":"hello world","idempotency_key":"emb-1"}`)
	if r.status != 200 || num(r.body["credits_charged"]) != 1 || w.balance(acct) != before-1 {
		t.Fatalf("embeddings: %d %s", r.status, r.raw)
	}
	r = w.do("POST", "/v1/embeddings", key(), `{"input":"hello world","idempotency_key":"emb-1"}`)
	if r.status != 200 || r.body["replayed"] != true || num(r.body["credits_charged"]) != 0 || w.balance(acct) != before-1 {
		t.Fatalf("replay: %d %s", r.status, r.raw)
	}
	r = w.do("POST", "/v1/embeddings", w.key(acct, []auth.Scope{auth.TextWrite}, nil), `{"input":"x"}`)
	if r.status != 403 || r.body["error"] != "insufficient_scope" {
		t.Fatalf("scope: %d %s", r.status, r.raw)
	}
}

// TestCHAT11_PlanAndConfiguration: a plan without interactive capacity is plan_has_no_chat;
// a chat model without a runner is chat_not_configured (503), nothing charged.
func TestCHAT11_PlanAndConfiguration(t *testing.T) {
	w := newChatWorld(t, func(f *catalog.File) {
		for i := range f.LanguageModels {
			if f.LanguageModels[i].Slug == "qwen" {
				f.LanguageModels[i].Runner = catalog.RunnerNone
			}
		}
	})
	free := w.account(auth.Free, 100)
	r := w.do("POST", "/compat/v1/chat/completions", w.key(free, nil, nil), `{"model":"kimi","messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 403 || compatCode(r) != "plan_has_no_chat" {
		t.Fatalf("free plan compat: %d %s", r.status, r.raw)
	}
	r = w.do("POST", "/v1/chat", w.key(free, nil, nil), `{"conversation_id":"conv_x","message":"hi"}`)
	if r.status != 403 || r.body["error"] != "plan_has_no_chat" || r.body["plan"] != "free" {
		t.Fatalf("free plan: %d %s", r.status, r.raw)
	}
	acct := w.account(auth.Ultimate, 100)
	key := w.pool(acct, 8)
	r = w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 503 || compatCode(r) != "chat_not_configured" {
		t.Fatalf("no runner: %d %s", r.status, r.raw)
	}
	if w.balance(acct) != 100 || w.balance(free) != 100 {
		t.Fatal("refusals charged")
	}
}

// TestKEY25_CompatSeesStandingChangedElsewhere proves KEY-25 on /compat/v1 with the gate's
// principal cache warm: a compat call takes the cached key and its charge's transaction
// confirms it, so a revocation or a suspension made by another process (whose changes this
// process's cache is not told of) is refused at once with the spec's code, nothing charged, and
// before a later refusal of the same request (a body the protocol refuses).
func TestKEY25_CompatSeesStandingChangedElsewhere(t *testing.T) {
	w := newChatWorld(t, nil)
	ctx := context.Background()
	other := auth.NewService(w.db, w.auth.Format(), auth.NewHasher("chat-e2e-secret-0123456789"), utcNow, slog.New(slog.DiscardHandler))
	account := w.account(auth.Pro, 1000)
	ok := `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`
	// warm mints a key and makes one call with it: the gate caches its principal. Each key
	// makes at most five calls here, the interactive fuse's second.
	warm := func() auth.Minted {
		t.Helper()
		m, err := w.auth.Mint(ctx, auth.MintParams{AccountID: account})
		if err != nil {
			t.Fatal(err)
		}
		if r := w.do("POST", "/compat/v1/chat/completions", m.Key, ok); r.status != 200 {
			t.Fatalf("warm-up call: %d %s", r.status, r.raw)
		}
		return m
	}
	refused := func(key, code string, status int) {
		t.Helper()
		before := w.balance(account)
		for _, body := range []string{ok, `{"model":"qwen","messages":"hi"}`} {
			r := w.do("POST", "/compat/v1/chat/completions", key, body)
			if r.status != status || compatCode(r) != code {
				t.Fatalf("%s: %d %s", body, r.status, r.raw)
			}
		}
		if r := w.do("POST", "/compat/v1/embeddings", key, `{"model":"embed-small","input":"one"}`); r.status != status || compatCode(r) != code {
			t.Fatalf("embeddings: %d %s", r.status, r.raw)
		}
		if after := w.balance(account); after != before {
			t.Fatalf("balance %d after the refusals, want %d", after, before)
		}
	}
	suspended := warm()
	if err := w.db.SetAccountStatus(ctx, account, auth.Suspended); err != nil {
		t.Fatal(err)
	}
	refused(suspended.Key, "account_suspended", 403)
	if err := w.db.SetAccountStatus(ctx, account, auth.Live); err != nil {
		t.Fatal(err)
	}
	if r := w.do("POST", "/compat/v1/chat/completions", suspended.Key, ok); r.status != 200 {
		t.Fatalf("live again: %d %s", r.status, r.raw)
	}
	revoked := warm()
	if _, err := other.Revoke(ctx, revoked.Record.ID); err != nil {
		t.Fatal(err)
	}
	refused(revoked.Key, "key_revoked", 401)
}

// Issue 28 (items 1, 2 and 3): refusals are written for a person. A body of the wrong shape names
// the field, what it must be and what was sent, with the field as `param`, and never a Go
// type; an unknown model is quoted by a short prefix only, however long the name sent, on
// /compat/v1, /v1/chat and /v1/embeddings.
func TestCHAT_RefusalsForPeople(t *testing.T) {
	w := newChatWorld(t, nil)
	key := w.pool(w.account(auth.Ultimate, 1000), 8)
	r := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen","messages":"hi"}`)
	e, _ := r.body["error"].(map[string]any)
	if r.status != 400 || compatCode(r) != "invalid_body" || e["message"] != "messages must be an array, not a string." || e["param"] != "messages" {
		t.Fatalf("wrong shape: %d %s", r.status, r.raw)
	}
	if strings.Contains(r.raw, "Go struct") || strings.Contains(r.raw, "[]struct") {
		t.Fatalf("Go internals in the answer: %s", r.raw)
	}
	// A NUL character, which PostgreSQL cannot keep, is refused on every database, naming its
	// field, before anything is stored.
	for _, c := range []struct{ path, body, param string }{
		{"/v1/chat/conversations", `{"title":"a\u0000b"}`, "title"},
		{"/compat/v1/chat/completions", `{"model":"qwen","messages":[{"role":"user","content":"x\u0000"}]}`, "messages[0].content"},
	} {
		r := w.do("POST", c.path, key(), c.body)
		if r.status != 400 || !strings.Contains(r.raw, "invalid_body") || !strings.Contains(r.raw, c.param+" contains a NUL") {
			t.Fatalf("%s with a NUL: %d %s", c.path, r.status, r.raw)
		}
	}
	long := strings.Repeat("m", 100_000)
	conv := w.do("POST", "/v1/chat/conversations", key(), `{"title":"long names"}`)
	if conv.status != 200 && conv.status != 201 {
		t.Fatalf("conversation: %d %s", conv.status, conv.raw)
	}
	for _, c := range []struct{ path, body string }{
		{"/compat/v1/chat/completions", `{"model":"` + long + `","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat", `{"conversation_id":"` + conv.body["id"].(string) + `","model":"` + long + `","message":"hi"}`},
		{"/v1/embeddings", `{"model":"` + long + `","input":"hi"}`},
	} {
		r := w.do("POST", c.path, key(), c.body)
		if r.status != 400 || !strings.Contains(r.raw, "unknown_model") || len(r.raw) > 2000 {
			t.Fatalf("%s with a 100,000-character model: %d, %d bytes: %.300s", c.path, r.status, len(r.raw), r.raw)
		}
	}
}

// Issue 28 (item 7), ERR-58 / CHAT-12: a null element of an embeddings input is input_invalid,
// not input_required; the compat surface's 404 and 405 carry the rate-limit headers every
// response carries, and the 404's type is not_found_error.
func TestCHAT12_InputInvalidAndFallbackHeaders(t *testing.T) {
	w := newChatWorld(t, nil)
	key := w.pool(w.account(auth.Ultimate, 1000), 8)
	for _, path := range []string{"/v1/embeddings", "/compat/v1/embeddings"} {
		r := w.do("POST", path, key(), `{"model":"embed-small","input":["ok",null]}`)
		if r.status != 400 || !strings.Contains(r.raw, "input_invalid") {
			t.Fatalf("%s with a null element: %d %s", path, r.status, r.raw)
		}
	}
	nf := w.do("GET", "/compat/v1/nothing-here", key(), "")
	e, _ := nf.body["error"].(map[string]any)
	if nf.status != 404 || e["type"] != "not_found_error" || nf.header.Get("RateLimit-Limit") == "" || nf.header.Get("X-RateLimit-Remaining") == "" {
		t.Fatalf("404: %d %v %s", nf.status, nf.header, nf.raw)
	}
	na := w.do("DELETE", "/compat/v1/chat/completions", key(), "")
	if na.status != 405 || na.header.Get("RateLimit-Limit") == "" {
		t.Fatalf("405: %d %v %s", na.status, na.header, na.raw)
	}
}

// Issue 28 (item 5): settings are honoured or refused, never accepted without effect. A
// shortened embedding (dimensions) comes back that long and of unit length; settings no model
// here honours, a temperature out of range, a user that is not a string and a message without
// content are OpenAI's 400 with their param, and nothing is charged for them.
func TestCHAT_SettingsHonouredOrRefused(t *testing.T) {
	w := newChatWorld(t, nil)
	account := w.account(auth.Ultimate, 1000)
	key := w.pool(account, 8)
	r := w.do("POST", "/compat/v1/embeddings", key(), `{"model":"embed-small","input":"the cat sat","dimensions":64}`)
	data, _ := r.body["data"].([]any)
	if r.status != 200 || len(data) != 1 {
		t.Fatalf("dimensions 64: %d %.300s", r.status, r.raw)
	}
	vec, _ := data[0].(map[string]any)["embedding"].([]any)
	var sum float64
	for _, x := range vec {
		f, _ := x.(float64)
		sum += f * f
	}
	if len(vec) != 64 || sum < 0.999 || sum > 1.001 {
		t.Fatalf("dimensions 64: %d values, squared length %f", len(vec), sum)
	}
	before := w.balance(account)
	msg := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ path, body, param string }{
		{"/compat/v1/embeddings", `{"model":"embed-small","input":"x","dimensions":100000}`, "dimensions"},
		{"/compat/v1/embeddings", `{"model":"embed-small","input":"x","dimensions":0}`, "dimensions"},
		{"/compat/v1/chat/completions", `{"model":"qwen",` + msg + `,"temperature":-5}`, "temperature"},
		{"/compat/v1/chat/completions", `{"model":"qwen",` + msg + `,"temperature":1e308}`, "temperature"},
		{"/compat/v1/chat/completions", `{"model":"qwen",` + msg + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, "tools"},
		{"/compat/v1/chat/completions", `{"model":"qwen",` + msg + `,"tool_choice":"required"}`, "tool_choice"},
		{"/compat/v1/chat/completions", `{"model":"qwen",` + msg + `,"response_format":{"type":"json_object"}}`, "response_format"},
		{"/compat/v1/chat/completions", `{"model":"qwen",` + msg + `,"user":5}`, "user"},
		{"/compat/v1/chat/completions", `{"model":"qwen","messages":[{"role":"user"}]}`, "messages[0].content"},
	} {
		r := w.do("POST", c.path, key(), c.body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != 400 || e["param"] != c.param || e["type"] != "invalid_request_error" {
			t.Fatalf("%s: %d %s, want 400 with param %s", c.body, r.status, r.raw, c.param)
		}
	}
	for _, ok := range []string{`,"user":"end-user-1"`, `,"tool_choice":"none"`, `,"response_format":{"type":"text"}`, `,"logprobs":false`} {
		if r := w.do("POST", "/compat/v1/chat/completions", key(), `{"model":"qwen",`+msg+ok+`}`); r.status != 200 {
			t.Fatalf("%s: %d %s", ok, r.status, r.raw)
		}
	}
	if got := w.balance(account); got >= before {
		t.Fatalf("the accepted calls charged nothing: %d, %d", before, got)
	}
}
