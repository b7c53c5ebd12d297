package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/modelexec/modelexec/internal/chat"
)

// Chat is the chat.Store view of a DB.
type Chat struct{ *DB }

var _ chat.Store = Chat{}

// CreateConversation stores a new conversation.
func (s Chat) CreateConversation(ctx context.Context, c chat.Conversation) error {
	_, err := s.sql.ExecContext(ctx, `INSERT INTO chat_conversations (account_id, id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)`,
		c.AccountID, c.ID, c.Title, micros(c.CreatedAt), micros(c.UpdatedAt))
	return err
}

func scanConversation(row interface{ Scan(...any) error }) (chat.Conversation, error) {
	var c chat.Conversation
	var created, updated int64
	if err := row.Scan(&c.AccountID, &c.ID, &c.Title, &created, &updated); err != nil {
		if isNoRows(err) {
			return c, chat.ErrNotFound
		}
		return c, err
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

// Conversation returns an account's conversation.
func (s Chat) Conversation(ctx context.Context, accountID, id string) (chat.Conversation, error) {
	return scanConversation(s.sql.QueryRowContext(ctx, `SELECT account_id, id, title, created_at, updated_at FROM chat_conversations
 WHERE account_id = $1 AND id = $2`, accountID, id))
}

// ListConversations returns an account's conversations updated before `before`, newest first.
func (s Chat) ListConversations(ctx context.Context, accountID string, before time.Time, limit int) ([]chat.Conversation, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT account_id, id, title, created_at, updated_at FROM chat_conversations
 WHERE account_id = $1 AND updated_at < $2 ORDER BY updated_at DESC, id DESC LIMIT $3`, accountID, micros(before), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []chat.Conversation
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

const messageCols = `id, conversation_id, account_id, role, content, model, job_id, idem_key, status, created_at`

func scanMessage(row interface{ Scan(...any) error }) (chat.Message, error) {
	var m chat.Message
	var created int64
	if err := row.Scan(&m.ID, &m.ConversationID, &m.AccountID, &m.Role, &m.Content, &m.Model, &m.JobID, &m.IdempotencyKey, &m.Status, &created); err != nil {
		if isNoRows(err) {
			return m, chat.ErrNotFound
		}
		return m, err
	}
	m.CreatedAt = fromMicros(created)
	return m, nil
}

// Messages returns a conversation's messages, oldest first.
func (s Chat) Messages(ctx context.Context, conversationID string) ([]chat.Message, error) {
	rows, err := s.sql.QueryContext(ctx, `SELECT `+messageCols+` FROM chat_messages WHERE conversation_id = $1 ORDER BY seq`, conversationID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []chat.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// AddTurn stores a turn's two messages and touches the conversation, in one transaction. A
// second turn with the same key loses on the unique index: chat.ErrDuplicate.
func (s Chat) AddTurn(ctx context.Context, user, assistant chat.Message) error {
	return s.DB.InTx(ctx, func(tx *Tx) error {
		var seq int64
		if err := tx.q.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM chat_messages WHERE conversation_id = $1`, user.ConversationID).Scan(&seq); err != nil {
			return err
		}
		for i, m := range []chat.Message{user, assistant} {
			_, err := tx.q.ExecContext(ctx, `INSERT INTO chat_messages (`+messageCols+`, seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				m.ID, m.ConversationID, m.AccountID, m.Role, m.Content, m.Model, m.JobID, m.IdempotencyKey, m.Status, micros(m.CreatedAt), seq+int64(i)+1)
			if isUniqueViolation(err) {
				return chat.ErrDuplicate
			}
			if err != nil {
				return err
			}
		}
		res, err := tx.q.ExecContext(ctx, `UPDATE chat_conversations SET updated_at = $1 WHERE account_id = $2 AND id = $3`,
			micros(assistant.CreatedAt), user.AccountID, user.ConversationID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("chat: conversation %s: %w", user.ConversationID, chat.ErrNotFound)
		}
		return nil
	})
}

// MessageByKey returns the assistant message of a turn by its idempotency key.
func (s Chat) MessageByKey(ctx context.Context, accountID, key string) (chat.Message, error) {
	return scanMessage(s.sql.QueryRowContext(ctx, `SELECT `+messageCols+` FROM chat_messages
 WHERE account_id = $1 AND idem_key = $2 AND role = 'assistant'`, accountID, key))
}

// RemoveTurn deletes a turn's two messages.
func (s Chat) RemoveTurn(ctx context.Context, userID, assistantID string) error {
	_, err := s.sql.ExecContext(ctx, `DELETE FROM chat_messages WHERE id IN ($1, $2)`, userID, assistantID)
	return err
}

// FinishMessage records an assistant message's settled content and status.
func (s Chat) FinishMessage(ctx context.Context, id, content, status string) error {
	_, err := s.sql.ExecContext(ctx, `UPDATE chat_messages SET content = $1, status = $2 WHERE id = $3`, content, status, id)
	return err
}
