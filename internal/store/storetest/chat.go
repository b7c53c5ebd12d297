package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/chat"
)

// RunChat is the conformance suite of the chat store (conversations and turns).
func RunChat(t *testing.T, open func(t testing.TB) Stores) {
	t.Run("ConversationsAndTurns", func(t *testing.T) { testChat(t, open(t).Chat) })
}

func testChat(t *testing.T, s chat.Store) {
	ctx := context.Background()
	mustOK := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	c1 := chat.Conversation{ID: "conv_1", AccountID: "acct_a", Title: "first", CreatedAt: t0, UpdatedAt: t0}
	c2 := chat.Conversation{ID: "conv_2", AccountID: "acct_a", Title: "second", CreatedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Minute)}
	mustOK(s.CreateConversation(ctx, c1))
	mustOK(s.CreateConversation(ctx, c2))
	mustOK(s.CreateConversation(ctx, chat.Conversation{ID: "conv_3", AccountID: "acct_b", CreatedAt: t0, UpdatedAt: t0}))
	if _, err := s.Conversation(ctx, "acct_b", "conv_1"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("another account's conversation: %v, want ErrNotFound", err)
	}
	turn := func(conv, key string, at time.Time) (chat.Message, chat.Message) {
		u := chat.Message{ID: "msg_u_" + key, ConversationID: conv, AccountID: "acct_a", Role: "user", Content: "hello " + key, Status: chat.StatusComplete, CreatedAt: at}
		a := chat.Message{ID: "msg_a_" + key, ConversationID: conv, AccountID: "acct_a", Role: "assistant", Model: "qwen", JobID: "chat_" + key,
			IdempotencyKey: key, Status: chat.StatusInFlight, CreatedAt: at}
		return u, a
	}
	u1, a1 := turn("conv_1", "k1", t0.Add(2*time.Minute))
	mustOK(s.AddTurn(ctx, u1, a1))
	u2, a2 := turn("conv_1", "k2", t0.Add(3*time.Minute))
	mustOK(s.AddTurn(ctx, u2, a2))
	// The same key again loses on the unique index, and writes nothing.
	u3, a3 := turn("conv_1", "k1", t0.Add(4*time.Minute))
	u3.ID, a3.ID = "msg_u_dup", "msg_a_dup"
	if err := s.AddTurn(ctx, u3, a3); !errors.Is(err, chat.ErrDuplicate) {
		t.Fatalf("duplicate key: %v, want ErrDuplicate", err)
	}
	msgs, err := s.Messages(ctx, "conv_1")
	mustOK(err)
	if len(msgs) != 4 || msgs[0].ID != "msg_u_k1" || msgs[1].ID != "msg_a_k1" || msgs[3].ID != "msg_a_k2" {
		t.Fatalf("thread %+v", msgs)
	}
	m, err := s.MessageByKey(ctx, "acct_a", "k2")
	mustOK(err)
	if m.ID != "msg_a_k2" || m.Status != chat.StatusInFlight || m.JobID != "chat_k2" {
		t.Fatalf("by key %+v", m)
	}
	if _, err := s.MessageByKey(ctx, "acct_b", "k2"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("another account's key: %v", err)
	}
	mustOK(s.FinishMessage(ctx, "msg_a_k2", "answer", chat.StatusComplete))
	if m, _ := s.MessageByKey(ctx, "acct_a", "k2"); m.Content != "answer" || m.Status != chat.StatusComplete {
		t.Fatalf("finished %+v", m)
	}
	// A turn touches its conversation: conv_1 is now the most recent.
	list, err := s.ListConversations(ctx, "acct_a", t0.Add(time.Hour), 10)
	mustOK(err)
	if len(list) != 2 || list[0].ID != "conv_1" || !list[0].UpdatedAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("list %+v", list)
	}
	page, err := s.ListConversations(ctx, "acct_a", list[0].UpdatedAt, 10)
	mustOK(err)
	if len(page) != 1 || page[0].ID != "conv_2" {
		t.Fatalf("page after the cursor %+v", page)
	}
	// A turn on a missing conversation writes nothing.
	u4, a4 := turn("conv_missing", "k9", t0)
	if err := s.AddTurn(ctx, u4, a4); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("turn on a missing conversation: %v", err)
	}
	if _, err := s.MessageByKey(ctx, "acct_a", "k9"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("rolled back turn left a message: %v", err)
	}
	// A removed turn leaves the thread as it was and frees its key.
	u5, a5 := turn("conv_2", "k5", t0.Add(5*time.Minute))
	mustOK(s.AddTurn(ctx, u5, a5))
	mustOK(s.RemoveTurn(ctx, u5.ID, a5.ID))
	if msgs, err := s.Messages(ctx, "conv_2"); err != nil || len(msgs) != 0 {
		t.Fatalf("thread after a removed turn: %+v %v", msgs, err)
	}
	mustOK(s.AddTurn(ctx, u5, a5))
}
