package chat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

// brokenStore fails every write; reads find nothing.
type brokenStore struct{ Store }

func (brokenStore) CreateConversation(context.Context, Conversation) error {
	return errors.New("disk full")
}

// CHAT-09, CHAT-10: a title over 200 characters is invalid_title; a conversation the store
// cannot keep is conversation_not_created (500), never a silent success.
func TestCHAT10_OpenRefusals(t *testing.T) {
	s := &Service{Store: brokenStore{}, Now: func() time.Time { return time.Unix(0, 0) }}
	if _, err := s.Open(context.Background(), "acct_a", strings.Repeat("é", 201)); !apierr.Is(err, apierr.InvalidTitle) {
		t.Fatalf("201-character title: %v", err)
	}
	_, err := s.Open(context.Background(), "acct_a", strings.Repeat("é", 200))
	if !apierr.Is(err, apierr.ConversationNotCreated) {
		t.Fatalf("store failure: %v, want conversation_not_created", err)
	}
	if e, _ := apierr.As(err); e.Entry().Status != 500 {
		t.Fatalf("conversation_not_created is %d", e.Entry().Status)
	}
}
