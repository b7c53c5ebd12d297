package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// mockUpstream is an OpenAI-compatible model server, as `--openai-upstream kimi=URL,tools`
// names one. It answers from the last user message: "[400]" is its parser refusing the
// request (400 "context too long"), "[tool]" a call of get_weather only, "[texttool]" the
// text "Checking both." and the call; anything else the text "It is sunny.". It answers
// streamed when asked, and keeps the messages of every request it reads.
type mockUpstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []json.RawMessage // each request's messages
}

func newMockUpstream(t *testing.T) *mockUpstream {
	u := &mockUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *mockUpstream) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages json.RawMessage `json:"messages"`
		Stream   bool            `json:"stream"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	u.mu.Lock()
	u.seen = append(u.seen, req.Messages)
	u.mu.Unlock()
	var msgs []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	_ = json.Unmarshal(req.Messages, &msgs)
	last := ""
	for _, m := range msgs {
		if s, ok := m.Content.(string); ok && m.Role == "user" {
			last = s
		}
	}
	text, calls := "It is sunny.", false
	switch {
	case strings.Contains(last, "[400]"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"context too long"}}`)
		return
	case strings.Contains(last, "[texttool]"):
		text, calls = "Checking both.", true
	case strings.Contains(last, "[tool]"):
		text, calls = "", true
	}
	call := map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Oslo"}`}}
	finish := "stop"
	if calls {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if text != "" {
			msg["content"] = text
		}
		if calls {
			msg["tool_calls"] = []any{call}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if text != "" {
		send(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"content": text}}}})
	}
	if calls {
		piece := map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Oslo"}`}}
		send(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"tool_calls": []any{piece}}}}})
	}
	send(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{}, "finish_reason": finish}}})
	send(map[string]any{"choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// lastMessages is the messages of the last request the upstream read.
func (u *mockUpstream) lastMessages(t *testing.T) []map[string]any {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("the upstream read no request")
	}
	var out []map[string]any
	if err := json.Unmarshal(u.seen[len(u.seen)-1], &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// newUpstreamHarness is the service as `modelexec serve --dev --openai-upstream
// kimi=URL,images,tools` runs it: the reference models, kimi on the mock upstream.
func newUpstreamHarness(t *testing.T, db *sqlstore.DB, u *mockUpstream) *modelsHarness {
	return newModelsHarnessOn(t, db, blobs.NewMemory(), func(c *server.Config) {
		c.ReferenceModels = true
		c.OpenAIUpstream = []string{"kimi=" + u.srv.URL + ",images,tools"}
	})
}

// TestERR21_CompatResponsesParserRefusal proves ERR-21 on every /compat/v1 route that runs a
// chat model: the model's parser refusing the request (its server's 400) is 422
// invalid_input without detail on /responses as on /chat/completions and /completions, and a
// replay of its key on another route answers the same.
func TestERR21_CompatResponsesParserRefusal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		u := newMockUpstream(t)
		m := newUpstreamHarness(t, db, u)
		for _, c := range []struct{ path, body string }{
			{"/responses", `{"model":"kimi","input":"[400] hi"}`},
			{"/responses", `{"model":"kimi","instructions":"Be brief.","input":[{"role":"user","content":"[400] hi"}]}`},
			{"/chat/completions", `{"model":"kimi","messages":[{"role":"user","content":"[400] hi"}]}`},
			{"/completions", `{"model":"kimi","prompt":"[400] hi"}`},
		} {
			key := "parser-" + fmt.Sprint(len(c.body)) + strings.Trim(c.path, "/")
			r := m.call(http.MethodPost, m.api.URL+"/compat/v1"+c.path, c.body, "Idempotency-Key", key)
			e, _ := r.Body["error"].(map[string]any)
			if r.Code != http.StatusUnprocessableEntity || e["code"] != "invalid_input" || e["type"] != "invalid_request_error" || r.Body["detail"] != nil {
				t.Fatalf("%s %s: %d %s, want 422 invalid_input without detail", c.path, c.body, r.Code, r.Raw)
			}
			if !strings.Contains(fmt.Sprint(e["message"]), "context too long") {
				t.Fatalf("%s: %q does not say what the model said", c.path, e["message"])
			}
			for other, body := range map[string]string{
				"/responses":        `{"model":"kimi","input":"x"}`,
				"/chat/completions": `{"model":"kimi","messages":[{"role":"user","content":"x"}]}`,
			} {
				again := m.call(http.MethodPost, m.api.URL+"/compat/v1"+other, body, "Idempotency-Key", key)
				if again.Code != http.StatusUnprocessableEntity || again.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("%s replayed on %s: %d %s, want the first call's 422", c.path, other, again.Code, again.Raw)
				}
			}
		}
	})
}
