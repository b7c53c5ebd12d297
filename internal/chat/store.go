package chat

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned for a conversation or message that does not exist (or is another
// account's: the same answer).
var ErrNotFound = errors.New("chat: not found")

// Conversation is a thread of turns.
type Conversation struct {
	ID        string
	AccountID string
	Title     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Message is one message of a conversation. An assistant message is written when its turn
// is submitted (JobID set, Content empty) and filled when the turn settles.
type Message struct {
	ID             string
	ConversationID string
	AccountID      string
	Role           string // user or assistant
	Content        string
	Model          string
	JobID          string // the turn's job (assistant messages)
	IdempotencyKey string
	Status         string // complete, in_flight, failed
	CreatedAt      time.Time
}

// Message statuses.
const (
	StatusComplete = "complete"
	StatusInFlight = "in_flight"
	StatusFailed   = "failed"
)

// Store keeps conversations and their messages.
type Store interface {
	// CreateConversation stores a new conversation.
	CreateConversation(ctx context.Context, c Conversation) error
	// Conversation returns an account's conversation (ErrNotFound otherwise).
	Conversation(ctx context.Context, accountID, id string) (Conversation, error)
	// ListConversations returns an account's conversations updated before `before`, newest first.
	ListConversations(ctx context.Context, accountID string, before time.Time, limit int) ([]Conversation, error)
	// Messages returns a conversation's messages, oldest first.
	Messages(ctx context.Context, conversationID string) ([]Message, error)
	// AddTurn stores a turn's user and assistant messages and touches the conversation.
	AddTurn(ctx context.Context, user, assistant Message) error
	// MessageByKey returns the assistant message of a turn by its idempotency key within an
	// account (ErrNotFound otherwise).
	MessageByKey(ctx context.Context, accountID, key string) (Message, error)
	// FinishMessage records an assistant message's settled content and status.
	FinishMessage(ctx context.Context, id, content, status string) error
	// RemoveTurn deletes a turn's two messages (a turn refused before its job was written).
	RemoveTurn(ctx context.Context, userID, assistantID string) error
}

// ErrDuplicate is returned by AddTurn when the account already has a turn with the key.
var ErrDuplicate = errors.New("chat: duplicate turn key")
