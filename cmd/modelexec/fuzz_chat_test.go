package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/server"
)

// fuzzChatRoutes are the chat, embeddings and compatibility routes the chat fuzzer drives.
var fuzzChatRoutes = []struct{ method, path string }{
	{"POST", "/compat/v1/chat/completions"}, {"POST", "/compat/v1/completions"}, {"POST", "/compat/v1/responses"},
	{"POST", "/compat/v1/embeddings"}, {"GET", "/compat/v1/models"}, {"GET", "/compat/v1/models/qwen"},
	{"POST", "/v1/chat"}, {"POST", "/v1/chat/conversations"}, {"POST", "/v1/embeddings"},
}

// goInternals are words that show Go's types or an error chain rather than a message for a
// person; a message may hold one only where the request itself sent it (a quoted model name).
var goInternals = []string{"struct", "[]", "json:", "unmarshal", "Unmarshal", "Go value", "invalid character", "dial tcp",
	"context canceled", "context deadline", "sql:", "SQLSTATE", "sqlite", "runtime error", "%!"}

// FuzzChatSurfaces sends arbitrary bodies and idempotency keys to the chat, embeddings and
// /compat/v1 routes of a service built as `serve --reference-models` builds it, with credits
// and rate buckets wide enough that calls run. Whatever arrives: no 500 (a panic recovered is a
// 500 too), no refusal more than a few times larger than the request (len(answer) <= 4 *
// len(request) + 8 KiB; a model's answer is bounded by the output budget the caller paid for
// instead), and no message — in an error body or a stream's error event — holding Go's type
// names or an error chain.
func FuzzChatSurfaces(f *testing.F) {
	h, key, conv := fuzzChatService(f)
	for _, s := range []struct {
		sel  uint8
		idem string
		body string
	}{
		{0, "", `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`},
		{0, "k1", `{"model":"kimi","messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":20}`},
		{0, "", `{"model":"qwen","messages":"hi"}`},
		{0, "", `{"model":"qwen","messages":[{"role":"user","content":[{"type":"image_url"}]}],"temperature":9,"stop":5}`},
		{0, "", `{"model":"kimi","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}],"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`},
		{0, "", `{"model":"kimi","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c"}]},{"role":"tool","tool_call_id":"c","content":"1"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`},
		{1, "", `{"model":"qwen","prompt":["a"],"stream":true}`},
		{2, "r-1", `{"model":"qwen","input":[{"role":"user","content":[{"type":"input_text","text":"go"}]}],"stream":true,"max_output_tokens":4}`},
		{2, "", `{"model":"qwen","input":[{"type":"function_call"}],"tools":[{"type":"function"}]}`},
		{2, "", `{"model":"qwen","input":5}`},
		{3, "", `{"model":"embed-small","input":["a",null],"dimensions":8,"encoding_format":"base64"}`},
		{4, "", ``},
		{6, "t-1", `{"conversation_id":"` + conv + `","message":"hello","effort":"deep","stream":true}`},
		{6, "", `{"conversation_id":"` + conv + `","message":7}`},
		{7, "", `{"title":"a\u0000"}`},
		{8, "", `{"input":"hello","model":"embed-small","idempotency_key":"e 1"}`},
		{8, "", `[1,{"a":` + strings.Repeat("[", 60) + `]}`},
	} {
		f.Add(s.sel, s.idem, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, sel uint8, idem string, body []byte) {
		route := fuzzChatRoutes[int(sel)%len(fuzzChatRoutes)]
		req := httptest.NewRequest(route.method, route.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if validHeader("Idempotency-Key", idem) && strings.TrimSpace(idem) != "" {
			req.Header.Set("Idempotency-Key", strings.TrimSpace(idem))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		sent := len(route.path) + len(idem) + len(body) + len(key)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q answered %d: %.500s", route.method, route.path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 300 && rec.Body.Len() > 4*sent+8<<10 {
			t.Fatalf("%s %s: a %d-byte request answered %d with %d bytes", route.method, route.path, sent, rec.Code, rec.Body.Len())
		}
		for _, msg := range messagesOf(rec.Body.Bytes()) {
			for _, word := range goInternals {
				if strings.Contains(msg, word) && !strings.Contains(string(body), word) {
					t.Fatalf("%s %s %q: message %q shows %q", route.method, route.path, body, msg, word)
				}
			}
		}
	})
}

// messagesOf answers every "message" string of a JSON body, or of each `data:` line of a stream.
func messagesOf(b []byte) []string {
	docs := [][]byte{b}
	if bytes.Contains(b, []byte("data: ")) {
		docs = nil
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				docs = append(docs, d)
			}
		}
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "message" {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, d := range docs {
		var v any
		if json.Unmarshal(d, &v) == nil {
			walk(v)
		}
	}
	return out
}

// fuzzChatService builds the API surface with the reference models on, an account with ample
// credits on plan figures whose buckets do not pace the fuzzer, a key and a conversation.
func fuzzChatService(f *testing.F) (http.Handler, string, string) {
	var pf map[string]any
	if err := json.Unmarshal(plans.Default().JSON(), &pf); err != nil {
		f.Fatal(err)
	}
	for b := range pf["instance_fuse"].(map[string]any) {
		pf["instance_fuse"].(map[string]any)[b] = 1_000_000
	}
	rates := pf["plans"].(map[string]any)["ultimate"].(map[string]any)["rates"].(map[string]any)
	for _, b := range []string{"interactive", "write", "read"} {
		rates[b] = map[string]any{"burst": 1_000_000_000, "refill": 1_000_000_000, "period": "1m"}
	}
	raw, _ := json.Marshal(pf)
	c := &ServeCmd{Roles: "api,worker", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	c.Data, c.Secret, c.ReferenceModels = migratedData(f), "fuzz-chat-secret-0123456789", true
	c.Plans = filepath.Join(f.TempDir(), "plans.json")
	if err := os.WriteFile(c.Plans, raw, 0o600); err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	db, err := c.open(ctx)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	svc, err := c.authService(db, false, log, utcNow)
	if err != nil {
		f.Fatal(err)
	}
	a, err := c.buildWith(ctx, db, svc, log, lowCost)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = a.Close() })
	if err := db.CreateAccount(ctx, auth.Account{ID: "acct_fuzzchat", Plan: auth.Ultimate, Status: auth.Live, Balance: ledger.MaxGrant,
		AllowancePeriod: "9999-12", CreatedAt: utcNow().Add(-72 * time.Hour)}); err != nil {
		f.Fatal(err)
	}
	m, err := svc.Mint(ctx, auth.MintParams{AccountID: "acct_fuzzchat"})
	if err != nil {
		f.Fatal(err)
	}
	h := a.Handler(server.RoleAPI)
	req := httptest.NewRequest("POST", "/v1/chat/conversations", strings.NewReader(`{"title":"fuzz"}`))
	req.Header.Set("Authorization", "Bearer "+m.Key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var conv struct{ ID string }
	if err := json.Unmarshal(rec.Body.Bytes(), &conv); err != nil || conv.ID == "" {
		f.Fatalf("conversation: %d %s", rec.Code, rec.Body)
	}
	return h, m.Key, conv.ID
}
