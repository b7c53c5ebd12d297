package accountapi

import (
	"slices"

	"github.com/modelexec/modelexec/internal/catalog"
)

// oaChatPaths are the chat and embeddings routes (shapes designed after OpenAI's chat
// completions, conversations and embeddings; docs/chat.md).
func oaChatPaths(cat *catalog.Catalog) map[string]any {
	convID := oaPathParam("id", "Conversation id (conv_…).", oaStr())
	turnErrs := append(slices.Clone(oaKeyed), "404", "409")
	return map[string]any{
		"/v1/chat/conversations": map[string]any{
			"post": oaWithBody(oaOperation("openConversation", "chat", "Open a conversation; scope text:write (or chat:write); write bucket.", oaBearer, nil,
				map[string]any{"201": oaOk("The conversation.", "ChatConversation")}, oaKeyed...), "ChatConversationCreate"),
			"get": oaOperation("listConversations", "chat", "The account's conversations, most recently used first; scope chat:read.", oaBearer, []any{
				oaQueryParam("before", "ISO 8601 timestamp from next_before (else 400 invalid_before).", map[string]any{"type": "string", "format": "date-time"}),
				oaQueryParam("limit", "Page size 1 to 100 (else 400 invalid_limit carrying max).", map[string]any{"type": "integer", "minimum": 1, "maximum": 100}),
			}, map[string]any{"200": oaOk("A page of conversations.", "ChatConversationList")}, oaKeyed...),
		},
		"/v1/chat/conversations/{id}": map[string]any{"get": oaOperation("getConversation", "chat", "A conversation and its messages, oldest first; scope chat:read (text:write does not read threads back).", oaBearer,
			[]any{convID}, map[string]any{"200": oaOk("The conversation with messages.", "ChatThread")}, append(slices.Clone(oaKeyed), "404")...)},
		"/v1/chat": map[string]any{"post": oaWithBody(oaOperation("sendTurn", "chat", "Send a message to a conversation: a job of product chat, quoted from the prompt and the output budget, settled to the tokens used; interactive bucket; scope text:write (or chat:write). With stream true the answer is text/event-stream (chat.turn.chunk lines, then the chat.turn, then [DONE]). Sends no webhook event.", oaBearer, nil,
			map[string]any{"200": oaOk("The settled turn.", "ChatTurn")}, turnErrs...), "ChatTurnRequest")},
		"/v1/embeddings": map[string]any{"post": oaWithBody(oaOperation("createEmbeddings", "chat", "Embed strings: a job of product embeddings priced per input token; interactive bucket; scope embeddings:write.", oaBearer, nil,
			map[string]any{"200": oaOk("The vectors.", "EmbeddingList")}, oaKeyed...), "EmbeddingsRequest")},
	}
}

// oaChatSchemas are the chat and embeddings component schemas.
func oaChatSchemas(cat *catalog.Catalog) map[string]any {
	dateTime := map[string]any{"type": "string", "format": "date-time"}
	conv := oaObject([]string{"object", "id", "title", "created_at", "updated_at"}, map[string]any{
		"object": oaEnum("chat.conversation"), "id": oaStr(), "title": oaStr(), "created_at": dateTime, "updated_at": dateTime,
	})
	msg := oaObject([]string{"object", "id", "role", "content", "status", "created_at"}, map[string]any{
		"object": oaEnum("chat.message"), "id": oaStr(), "role": oaEnum("user", "assistant"), "content": oaStr(),
		"status": oaEnum("complete", "in_flight", "failed"), "created_at": dateTime,
		"model": oaStr(), "job_id": oaStr(), "idempotency_key": oaStr(),
	})
	thread := oaObject([]string{"object", "id", "title", "created_at", "updated_at", "messages"}, map[string]any{
		"object": oaEnum("chat.conversation"), "id": oaStr(), "title": oaStr(), "created_at": dateTime, "updated_at": dateTime,
		"messages": oaArrayOf(oaSchemaRef("ChatMessage")),
	})
	usage := oaObject([]string{"input_tokens", "total_tokens"}, map[string]any{"input_tokens": oaInteger(), "output_tokens": oaInteger(), "total_tokens": oaInteger()})
	return map[string]any{
		"ChatConversation":       conv,
		"ChatMessage":            msg,
		"ChatThread":             thread,
		"ChatConversationCreate": oaObject(nil, map[string]any{"title": map[string]any{"type": "string", "maxLength": 200}}),
		"ChatConversationList": oaObject([]string{"object", "data", "next_before"}, map[string]any{
			"object": oaEnum("list"), "data": oaArrayOf(oaSchemaRef("ChatConversation")), "next_before": oaNullable("string"),
		}),
		"ChatTurnRequest": oaObject([]string{"conversation_id", "message"}, map[string]any{
			"conversation_id": oaStr(),
			"message":         map[string]any{"type": "string", "minLength": 1, "maxLength": 24000},
			"model":           oaDescribed(oaEnum(cat.LanguageSlugs(catalog.KindChat)...), "Default qwen; another value is 400 unknown_model carrying allowed."),
			"effort":          oaDescribed(oaEnum(catalog.Efforts...), "Default balanced; another value is 400 unknown_effort."),
			"max_tokens":      map[string]any{"type": "integer", "minimum": 1},
			"idempotency_key": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
			"stream":          map[string]any{"type": "boolean"},
		}),
		"ChatTurn": oaObject([]string{"object", "id", "conversation_id", "job_id", "model", "message", "finish_reason", "usage", "credits_quoted", "credits_charged"}, map[string]any{
			"object": oaEnum("chat.turn"), "id": oaStr(), "conversation_id": oaStr(), "job_id": oaStr(), "model": oaStr(),
			"message": oaSchemaRef("ChatMessage"), "finish_reason": oaEnum("stop", "length"), "usage": usage,
			"credits_quoted": oaInteger(), "credits_charged": oaInteger(), "credits_remaining": oaInteger(),
		}),
		"EmbeddingsRequest": oaObject([]string{"input"}, map[string]any{
			"input":           map[string]any{"oneOf": []any{oaStr(), oaArrayOf(oaStr())}, "description": "A string or a list of strings (else input_invalid); missing or empty is input_required."},
			"model":           oaEnum(cat.LanguageSlugs(catalog.KindEmbeddings)...),
			"idempotency_key": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
		}),
		"EmbeddingList": oaObject([]string{"object", "data", "model", "job_id", "usage", "credits_quoted", "credits_charged", "replayed"}, map[string]any{
			"object": oaEnum("list"), "model": oaStr(), "job_id": oaStr(), "usage": usage, "created_at": dateTime,
			"credits_quoted": oaInteger(), "credits_charged": oaInteger(), "replayed": map[string]any{"type": "boolean"},
			"data": oaArrayOf(oaObject([]string{"object", "index", "embedding"}, map[string]any{
				"object": oaEnum("embedding"), "index": oaInteger(), "embedding": oaArrayOf(map[string]any{"type": "number"}),
			})),
		}),
	}
}
