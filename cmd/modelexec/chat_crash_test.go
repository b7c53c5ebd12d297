package main

import (
	"context"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// TestCHAT_TurnLostBeforeItsJobFails: a turn's messages are written before its charge and job;
// a process stopped between the two (kill -9) left the assistant message in_flight with no job,
// and its key answered in_flight for good. Once no start can still write the job, the thread
// reads the turn as failed, its key answers key_settled, nothing was charged, and the same
// message sent with a new key runs.
func TestCHAT_TurnLostBeforeItsJobFails(t *testing.T) {
	w := newChatWorld(t, nil)
	acct := w.account(auth.Ultimate, 1000)
	key := w.key(acct, []auth.Scope{auth.TextWrite, auth.ChatRead}, nil)
	r := w.do("POST", "/v1/chat/conversations", key, `{"title":"lost"}`)
	conv, _ := r.body["id"].(string)
	before := w.balance(acct)

	lost := time.Now().UTC().Add(-10 * time.Minute) // the turn a killed process took
	user := chat.Message{ID: "msg_lostuser", ConversationID: conv, AccountID: acct, Role: "user", Content: "hello",
		Model: "qwen", Status: chat.StatusComplete, CreatedAt: lost}
	asst := chat.Message{ID: "msg_lostasst", ConversationID: conv, AccountID: acct, Role: "assistant", Model: "qwen",
		JobID: "chat_klostjob", IdempotencyKey: "lost-turn", Status: chat.StatusInFlight, CreatedAt: lost}
	if err := (sqlstore.Chat{DB: w.db}).AddTurn(context.Background(), user, asst); err != nil {
		t.Fatal(err)
	}

	r = w.do("POST", "/v1/chat", key, `{"conversation_id":"`+conv+`","message":"hello","idempotency_key":"lost-turn"}`)
	if r.status != 409 || r.body["error"] != "key_settled" || r.body["message_id"] != "msg_lostasst" {
		t.Fatalf("the lost turn's key: %d %s", r.status, r.raw)
	}
	r = w.do("GET", "/v1/chat/conversations/"+conv, key, "")
	msgs, _ := r.body["messages"].([]any)
	if r.status != 200 || len(msgs) != 2 || msgs[1].(map[string]any)["status"] != chat.StatusFailed {
		t.Fatalf("the thread: %d %s", r.status, r.raw)
	}
	if w.balance(acct) != before {
		t.Fatalf("a lost turn charged %d", before-w.balance(acct))
	}
	r = w.do("POST", "/v1/chat", key, `{"conversation_id":"`+conv+`","message":"hello","idempotency_key":"lost-turn-2"}`)
	if r.status != 200 || r.body["object"] != "chat.turn" {
		t.Fatalf("the turn sent again: %d %s", r.status, r.raw)
	}
}
