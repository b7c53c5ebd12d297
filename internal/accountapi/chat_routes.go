package accountapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// chatRoutes registers the chat and embeddings routes (shapes in docs/chat.md) and mounts
// the compatibility surface.
func (h *Handler) chatRoutes(mux *http.ServeMux) {
	if h.Compat != nil {
		mux.Handle("/compat/v1/", h.Compat)
		mux.Handle("/compat/v1", h.Compat) // its checks and 404, not ServeMux's redirect to the slash form
	}
	if h.Chat == nil {
		return
	}
	text := needAny(auth.TextWrite, auth.ChatWrite)
	threads := need(auth.ChatRead)
	mux.Handle("POST /v1/chat/conversations", h.chatGate(httpapi.Route{Bucket: ratelimit.Write, Scope: text}, h.ready(catalog.KindChat, h.openConversation())))
	mux.Handle("GET /v1/chat/conversations", h.chatGate(httpapi.Route{Bucket: ratelimit.Read, Scope: threads}, h.listConversations()))
	mux.Handle("GET /v1/chat/conversations/{id}", h.chatGate(httpapi.Route{Bucket: ratelimit.Read, Scope: threads}, h.getConversation()))
	mux.Handle("POST /v1/chat", h.chatGate(httpapi.Route{Bucket: ratelimit.Interactive, Scope: text}, h.ready(catalog.KindChat, h.sendTurn())))
	mux.Handle("POST /v1/embeddings", h.chatGate(httpapi.Route{Bucket: ratelimit.Interactive, Scope: need(auth.EmbeddingsWrite)}, h.ready(catalog.KindEmbeddings, h.embed())))
}

// ready refuses a route whose kind of model answers nowhere on this deployment
// (chat_not_configured), before its body is read.
func (h *Handler) ready(kind string, fn chatHandler) chatHandler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		if err := h.Chat.Ready(kind); err != nil {
			return err
		}
		return fn(w, r, p)
	}
}

// needAny names a scope and the older names that reach the same routes.
func needAny(s auth.Scope, also ...auth.Scope) func(*http.Request) (auth.Requirement, error) {
	return func(*http.Request) (auth.Requirement, error) { return auth.Need(s, also...), nil }
}

type chatHandler func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error

// chatGate runs the order of checks; a plan whose interactive bucket has no capacity is
// refused plan_has_no_chat (spec 02 plan gates) rather than the generic bucket refusal.
func (h *Handler) chatGate(route httpapi.Route, fn chatHandler) http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.Gate.Check(w, r, route)
		if e, ok := apierr.As(err); ok && e.Code == apierr.PlanHasNoAPIGenerate && route.Bucket == ratelimit.Interactive {
			return apierr.Newf(apierr.PlanHasNoChat, "The %v plan has no chat or language-model calls.", e.Fields["plan"]).With("plan", e.Fields["plan"])
		}
		if err != nil {
			return err
		}
		return fn(w, r, p)
	})
}

func conversationBody(c chat.Conversation) map[string]any {
	return map[string]any{"object": "chat.conversation", "id": c.ID, "title": c.Title,
		"created_at": c.CreatedAt.Format(cursorLayout), "updated_at": c.UpdatedAt.Format(cursorLayout)}
}

func messageBody(m chat.Message) map[string]any {
	b := map[string]any{"object": "chat.message", "id": m.ID, "role": m.Role, "content": m.Content, "status": m.Status,
		"created_at": m.CreatedAt.Format(cursorLayout)}
	if m.Role == "assistant" {
		b["model"], b["job_id"], b["idempotency_key"] = m.Model, m.JobID, m.IdempotencyKey
	}
	return b
}

// decodeChat reads a JSON object body into v.
func decodeChat(r *http.Request, v any) error {
	b, err := httpapi.ReadBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	if _, err := httpapi.DecodeObject(b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return httpapi.ShapeError(err)
	}
	return nil
}

// idemKey reads idempotency_key from the body or the Idempotency-Key header (whose lines
// must agree).
func idemKey(r *http.Request, body string) (string, error) {
	hk, _, err := httpapi.OneHeader(r, "Idempotency-Key", func(x, y string) bool { return x == y })
	if err != nil {
		return "", err
	}
	k := body
	if k == "" {
		k = hk
	}
	if k != "" && !jobs.ValidIdempotencyKey(k) {
		return "", apierr.New(apierr.InvalidIdempotencyKey)
	}
	return k, nil
}

func (h *Handler) openConversation() chatHandler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		var req struct {
			Title string `json:"title"`
		}
		if err := decodeChat(r, &req); err != nil {
			return err
		}
		c, err := h.Chat.Open(r.Context(), p.Account.ID, req.Title)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusCreated, conversationBody(c))
		return nil
	}
}

func (h *Handler) listConversations() chatHandler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		q := r.URL.Query()
		before := endOfTime
		if s := q.Get("before"); s != "" {
			t, ok := parseBefore(s)
			if !ok {
				return apierr.New(apierr.InvalidBefore)
			}
			before = t
		}
		limit, err := parseLimit(q.Get("limit"))
		if err != nil {
			return err
		}
		cs, err := h.Chat.Conversations(r.Context(), p.Account.ID, before, limit+1)
		if err != nil {
			return err
		}
		cs, more, cut, err := timePage(cs, limit, func(c chat.Conversation) time.Time { return c.UpdatedAt },
			func(before time.Time) ([]chat.Conversation, error) {
				return h.Chat.Conversations(r.Context(), p.Account.ID, before, maxTieGroup+1)
			})
		if err != nil {
			return err
		}
		data := []any{}
		for _, c := range cs {
			data = append(data, conversationBody(c))
		}
		var next any
		if more {
			next = cut.UTC().Format(cursorLayout)
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"object": "list", "data": data, "next_before": next})
		return nil
	}
}

func (h *Handler) getConversation() chatHandler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		c, msgs, err := h.Chat.Conversation(r.Context(), p.Account.ID, r.PathValue("id"))
		if err != nil {
			return err
		}
		body := conversationBody(c)
		list := []any{}
		for _, m := range msgs {
			list = append(list, messageBody(m))
		}
		body["messages"] = list
		httpapi.WriteJSON(w, r, http.StatusOK, body)
		return nil
	}
}

type turnRequest struct {
	ConversationID string `json:"conversation_id"`
	Message        string `json:"message"`
	Model          string `json:"model"`
	Effort         string `json:"effort"`
	MaxTokens      *int   `json:"max_tokens"`
	IdempotencyKey string `json:"idempotency_key"`
	Stream         bool   `json:"stream"`
}

// defaultChatModel answers turns that name no model.
const defaultChatModel = "qwen"

func (h *Handler) sendTurn() chatHandler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		var req turnRequest
		if err := decodeChat(r, &req); err != nil {
			return err
		}
		key, err := idemKey(r, req.IdempotencyKey)
		if err != nil {
			return err
		}
		if req.Model == "" {
			req.Model = defaultChatModel
		}
		tr := chat.TurnRequest{Principal: p, ConversationID: req.ConversationID, Message: req.Message, Model: req.Model,
			Effort: req.Effort, IdempotencyKey: key, Stream: req.Stream}
		if req.MaxTokens != nil {
			if *req.MaxTokens <= 0 {
				return apierr.Newf(apierr.InvalidBody, "max_tokens must be a positive integer.")
			}
			tr.MaxTokens = *req.MaxTokens
		}
		t, err := h.Chat.StartTurn(r.Context(), tr)
		if err != nil {
			return err
		}
		defer t.Call.Close()
		w.Header().Set("X-Job-Id", t.Call.Job.ID)
		if req.Stream {
			return h.streamTurn(w, r, t)
		}
		out, err := t.Finish(r.Context(), h.Chat)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusOK, turnBody(t, out))
		return nil
	}
}

// turnBody is a settled turn, after OpenAI's chat completion: the assistant's message, why it
// stopped, the tokens and the credits.
func turnBody(t *chat.Turn, out chat.Outcome) map[string]any {
	j := out.Job
	return map[string]any{
		"object": "chat.turn", "id": t.Assistant.ID, "conversation_id": t.Conversation.ID, "job_id": j.ID, "model": t.Assistant.Model,
		"message":       messageBody(t.Assistant),
		"finish_reason": out.FinishReason,
		"usage": map[string]any{"input_tokens": out.Usage.InputTokens, "output_tokens": out.Usage.OutputTokens,
			"total_tokens": out.Usage.InputTokens + out.Usage.OutputTokens},
		"credits_quoted": j.Quoted, "credits_charged": j.Charged, "credits_remaining": t.Call.Balance + (j.Reserved - j.Charged),
	}
}

// streamTurn answers a turn as server-sent events: chat.turn.chunk objects carrying the text
// as it is written, then the settled turn (object chat.turn), then "data: [DONE]". A refusal
// after the 200 arrives as {"error": ...} inside the stream.
func (h *Handler) streamTurn(w http.ResponseWriter, r *http.Request, t *chat.Turn) error {
	ev := httpapi.EventStream(w)
	send := ev.Send
	sendErr := func(err error) {
		e, ok := apierr.As(err)
		if !ok {
			e = apierr.New(apierr.Internal)
		}
		_, body := httpapi.ErrorBody(e, httpapi.AccountSurface)
		send(body)
	}
	for {
		pieces, settled, err := t.Call.Next(r.Context())
		if err != nil {
			if r.Context().Err() != nil {
				return nil
			}
			sendErr(err)
			return nil
		}
		for _, p := range pieces {
			send(map[string]any{"object": "chat.turn.chunk", "id": t.Assistant.ID, "delta": map[string]any{"content": p}})
		}
		if settled {
			break
		}
	}
	out, err := t.Finish(r.Context(), h.Chat)
	if err != nil {
		sendErr(err)
		return nil
	}
	send(turnBody(t, out))
	ev.Done()
	return nil
}

type embedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	IdempotencyKey string          `json:"idempotency_key"`
}

func (h *Handler) embed() chatHandler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		var req embedRequest
		if err := decodeChat(r, &req); err != nil {
			return err
		}
		key, err := idemKey(r, req.IdempotencyKey)
		if err != nil {
			return err
		}
		texts, err := chat.ParseEmbeddingsInput(req.Input)
		if err != nil {
			return err
		}
		if req.Model == "" {
			if slugs := h.Chat.Catalog.LanguageSlugs(catalog.KindEmbeddings); len(slugs) > 0 {
				req.Model = slugs[0]
			}
		}
		call, err := h.Chat.Start(r.Context(), catalog.KindEmbeddings, chat.CallRequest{Principal: p, Model: req.Model,
			Input: catalog.EmbeddingsInput{Input: texts}, IdempotencyKey: key})
		if err != nil {
			return err
		}
		defer call.Close()
		if call.Kind != catalog.KindEmbeddings {
			// The key replays another kind of call (DESIGN 31), which this answer cannot
			// hold: in_flight or key_settled naming its job, as /v1/chat answers a key a job
			// holds. Nothing runs and nothing is charged again.
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("X-Job-Id", call.Job.ID)
			return chat.KeyTaken(call.Job)
		}
		out, err := call.Result(r.Context())
		if err != nil {
			return err
		}
		data := make([]any, len(out.Embeddings))
		for i, v := range out.Embeddings {
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
		}
		if call.Replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		j := out.Job
		charged := j.Charged
		if call.Replayed {
			charged = 0
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"object": "list", "data": data, "model": j.Model, "job_id": j.ID,
			"usage":          map[string]any{"input_tokens": out.Usage.InputTokens, "total_tokens": out.Usage.InputTokens},
			"credits_quoted": j.Quoted, "credits_charged": charged, "replayed": call.Replayed, "created_at": j.CreatedAt.Format(cursorLayout)})
		return nil
	}
}
