package main

import (
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
)

// TestSCP18_ChatWriteReachesChatRoutes proves SCP-18 over HTTP: a key holding only the older
// chat:write scope opens a conversation, takes a turn in it and calls the compatible chat
// completion, as text:write does; it does not reach embeddings (embeddings:write), and a key
// without either is refused insufficient_scope on the chat routes.
func TestSCP18_ChatWriteReachesChatRoutes(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	chat := w.key(acct, []auth.Scope{auth.ChatWrite}, nil)
	image := w.key(acct, []auth.Scope{auth.ImageWrite}, nil)

	r := w.do("POST", "/v1/chat/conversations", chat, `{"title":"Scopes"}`)
	if r.status != 201 {
		t.Fatalf("open with chat:write: %d %s", r.status, r.raw)
	}
	conv, _ := r.body["id"].(string)
	turn := `{"conversation_id":"` + conv + `","message":"Hello","effort":"light"}`
	if r := w.do("POST", "/v1/chat", chat, turn); r.status != 200 || r.body["object"] != "chat.turn" {
		t.Fatalf("turn with chat:write: %d %s", r.status, r.raw)
	}
	completion := `{"model":"qwen","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	if r := w.do("POST", "/compat/v1/chat/completions", chat, completion); r.status != 200 {
		t.Fatalf("compat chat with chat:write: %d %s", r.status, r.raw)
	}
	for _, c := range []struct{ key, path, body string }{
		{chat, "/v1/embeddings", `{"input":"hi"}`},
		{image, "/v1/chat/conversations", `{"title":"x"}`},
		{image, "/v1/chat", turn},
		{image, "/compat/v1/chat/completions", completion},
	} {
		r := w.do("POST", c.path, c.key, c.body)
		code := r.body["error"]
		if e, ok := code.(map[string]any); ok {
			code = e["code"] // the compatible surface's error object
		}
		if r.status != 403 || code != "insufficient_scope" {
			t.Errorf("%s without its scope: %d %s", c.path, r.status, r.raw)
		}
	}
}
