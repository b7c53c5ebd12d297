package chat

import (
	"context"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
)

// Limits of spec 02 "Limits".
const (
	MaxTitleChars   = 200
	MaxMessageChars = 24000
)

// Open creates a conversation.
func (s *Service) Open(ctx context.Context, accountID, title string) (Conversation, error) {
	if n := utf8.RuneCountInString(title); n > MaxTitleChars {
		return Conversation{}, apierr.Newf(apierr.InvalidTitle, "The title is %d characters; at most %d.", n, MaxTitleChars).With("max", MaxTitleChars)
	}
	if s.Store == nil {
		return Conversation{}, apierr.Newf(apierr.ChatNotConfigured, "Conversations are not kept on this deployment.")
	}
	now := s.Now()
	c := Conversation{ID: "conv_" + MintKey()[1:], AccountID: accountID, Title: title, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateConversation(ctx, c); err != nil {
		return Conversation{}, apierr.New(apierr.ConversationNotCreated).Wrap(err)
	}
	return c, nil
}

// Conversation reads an account's conversation with its messages, finishing any turn whose
// job settled since (a turn's request may have gone away before it did).
func (s *Service) Conversation(ctx context.Context, accountID, id string) (Conversation, []Message, error) {
	if s.Store == nil {
		return Conversation{}, nil, apierr.Newf(apierr.ChatNotConfigured, "Conversations are not kept on this deployment.")
	}
	c, err := s.Store.Conversation(ctx, accountID, id)
	if errors.Is(err, ErrNotFound) {
		return c, nil, apierr.Newf(apierr.ConversationNotFound, "No conversation %s on this account.", id)
	}
	if err != nil {
		return c, nil, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	msgs, err := s.Store.Messages(ctx, id)
	if err != nil {
		return c, nil, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	for i := range msgs {
		if msgs[i].Status == StatusInFlight {
			msgs[i] = s.reconcile(ctx, msgs[i])
		}
	}
	return c, msgs, nil
}

// Conversations lists an account's conversations, most recently used first.
func (s *Service) Conversations(ctx context.Context, accountID string, before time.Time, limit int) ([]Conversation, error) {
	if s.Store == nil {
		return nil, apierr.Newf(apierr.ChatNotConfigured, "Conversations are not kept on this deployment.")
	}
	cs, err := s.Store.ListConversations(ctx, accountID, before, limit)
	if err != nil {
		return nil, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	return cs, nil
}

// startGrace is the longest a turn's messages can wait for its job: the messages are written
// first, then the charge and the job (one transaction, its statements bounded).
const startGrace = 2 * time.Minute

// reconcile fills an in-flight assistant message whose job has settled. A message whose job
// was never written (the process that took the turn stopped between the two writes) is
// failed once startGrace has passed: nothing was charged, the thread leaves the turn out of
// later context, and its key answers key_settled, so the turn is sent again with a new key.
func (s *Service) reconcile(ctx context.Context, m Message) Message {
	j, err := s.Jobs.GetByID(ctx, m.AccountID, m.JobID)
	if apierr.Is(err, apierr.NotFound) && s.Now().Sub(m.CreatedAt) > startGrace {
		if s.Store.FinishMessage(ctx, m.ID, "", StatusFailed) == nil {
			m.Content, m.Status = "", StatusFailed
		}
		return m
	}
	if err != nil || !j.Settled() {
		return m
	}
	return s.finish(ctx, m, j)
}

func (s *Service) finish(ctx context.Context, m Message, j jobs.Job) Message {
	out, err := OutcomeOf(j)
	m.Content, m.Status = out.Content, StatusComplete
	if err != nil {
		m.Content, m.Status = "", StatusFailed
	}
	_ = s.Store.FinishMessage(ctx, m.ID, m.Content, m.Status) // readers reconcile again if this fails
	return m
}

// TurnRequest is one message sent to a conversation.
type TurnRequest struct {
	Principal      *auth.Principal
	ConversationID string
	Message        string
	Model          string
	Effort         string
	MaxTokens      int
	IdempotencyKey string
	Stream         bool
}

// Turn is a started turn: its messages and its call.
type Turn struct {
	Conversation Conversation
	User         Message
	Assistant    Message
	Call         *Call
}

// StartTurn checks a turn, records its messages and starts its job. Refusals, in order:
// conversation_required, text_too_long (over 24,000 characters), unknown_effort,
// unknown_model, chat_not_configured, conversation_not_found, then for a key already used
// in_flight (its turn still runs) or key_settled (it settled; send a new key), all before
// any charge; then the engine's (insufficient_credits, key_credit_ceiling, ...).
func (s *Service) StartTurn(ctx context.Context, r TurnRequest) (*Turn, error) {
	if r.ConversationID == "" {
		return nil, apierr.Newf(apierr.ConversationRequired, "conversation_id is required: open one with POST /v1/chat/conversations.")
	}
	if r.Message == "" {
		return nil, apierr.Newf(apierr.InvalidBody, "message is required.")
	}
	if n := utf8.RuneCountInString(r.Message); n > MaxMessageChars {
		return nil, apierr.Newf(apierr.TextTooLong, "The message is %d characters; at most %d.", n, MaxMessageChars).With("max", MaxMessageChars)
	}
	if r.Effort == "" {
		r.Effort = "balanced"
	}
	if !slices.Contains(catalog.Efforts, r.Effort) {
		return nil, apierr.Newf(apierr.UnknownEffort, "effort %q is not light, balanced or deep.", r.Effort).With("allowed", catalog.Efforts)
	}
	m, err := s.Model(catalog.KindChat, r.Model)
	if err != nil {
		return nil, err
	}
	accountID := r.Principal.Account.ID
	conv, history, err := s.Conversation(ctx, accountID, r.ConversationID)
	if err != nil {
		return nil, err
	}
	key := r.IdempotencyKey
	if key == "" {
		key = MintKey() // new: no turn and no job holds it, nothing to read
	} else if err := s.keyFree(ctx, accountID, key); err != nil {
		return nil, err
	}
	jobID := jobs.NewJobID(m.Product)
	in := catalog.ChatInput{Effort: r.Effort, MaxTokens: r.MaxTokens}
	for i := 0; i+1 < len(history); i++ {
		u, a := history[i], history[i+1]
		if u.Role == "user" && a.Role == "assistant" && a.Status == StatusComplete {
			in.Messages = append(in.Messages, catalog.Message{Role: "user", Content: u.Content}, catalog.Message{Role: "assistant", Content: a.Content})
			i++
		}
	}
	in.Messages = append(in.Messages, catalog.Message{Role: "user", Content: r.Message})
	now := s.Now()
	user := Message{ID: "msg_" + MintKey()[1:], ConversationID: conv.ID, AccountID: accountID, Role: "user", Content: r.Message,
		Model: m.Slug, Status: StatusComplete, CreatedAt: now}
	asst := Message{ID: "msg_" + MintKey()[1:], ConversationID: conv.ID, AccountID: accountID, Role: "assistant", Model: m.Slug,
		JobID: jobID, IdempotencyKey: key, Status: StatusInFlight, CreatedAt: now}
	// The messages are written before the charge: a turn that cannot be recorded costs nothing.
	if err := s.Store.AddTurn(ctx, user, asst); err != nil {
		if errors.Is(err, ErrDuplicate) {
			if prev, e := s.Store.MessageByKey(ctx, accountID, key); e == nil {
				return nil, s.keyUsed(ctx, prev)
			}
		}
		return nil, apierr.New(apierr.ChatStartFailed).WithCharged(false).Wrap(err)
	}
	call, err := s.Start(ctx, catalog.KindChat, CallRequest{Principal: r.Principal, Model: m.Slug, Input: in, IdempotencyKey: key, JobID: jobID, Stream: r.Stream})
	if err != nil {
		s.abandon(context.WithoutCancel(ctx), user, asst)
		return nil, err
	}
	return &Turn{Conversation: conv, User: user, Assistant: asst, Call: call}, nil
}

// abandon undoes the messages of a turn whose job did not start. A turn refused before any job
// was written (insufficient_credits, output_limit_reached, ...) leaves no trace: the thread
// reads as before and its key stays unspent, so the same turn resent once the cause is fixed
// runs. A turn whose job exists (it failed after its charge, refunded) stays in the thread,
// failed, and keeps its key.
func (s *Service) abandon(ctx context.Context, user, asst Message) {
	if _, err := s.Jobs.GetByID(ctx, asst.AccountID, asst.JobID); apierr.Is(err, apierr.NotFound) {
		if s.Store.RemoveTurn(ctx, user.ID, asst.ID) == nil {
			return
		}
	}
	_ = s.Store.FinishMessage(ctx, asst.ID, "", StatusFailed) // readers reconcile again if this fails
}

// keyFree refuses a key the caller sent before: a turn's (in_flight or key_settled, naming
// its message), or a job's (DESIGN 31: a key is the account's across products).
func (s *Service) keyFree(ctx context.Context, accountID, key string) error {
	if prev, err := s.Store.MessageByKey(ctx, accountID, key); err == nil {
		return s.keyUsed(ctx, prev)
	} else if !errors.Is(err, ErrNotFound) {
		return apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	if j, err := s.Jobs.GetByKey(ctx, accountID, key); err == nil {
		return KeyTaken(j)
	}
	return nil
}

// KeyTaken answers a request whose idempotency key a job holds that the request's surface
// cannot show as its own answer (a chat turn's key on another call, an image job's key on a
// language-model route): in_flight while the job runs, key_settled once it settled, naming the
// job to read at GET /v1/jobs/{id}. Nothing runs and nothing is charged again.
func KeyTaken(j jobs.Job) error {
	if !j.Settled() {
		return apierr.Newf(apierr.InFlight, "The idempotency key %s was already used by job %s, still running; read it at GET /v1/jobs/%s.", j.IdempotencyKey, j.ID, j.ID).
			With("message_id", nil).With("job_id", j.ID)
	}
	return apierr.Newf(apierr.KeySettled, "The idempotency key %s was already used by job %s; read it at GET /v1/jobs/%s, or send this request with a new key.", j.IdempotencyKey, j.ID, j.ID).
		With("message_id", nil).With("job_id", j.ID).WithCharged(j.ChargedState())
}

// keyUsed answers a turn whose key was sent before: in_flight while it runs, key_settled
// once it settled.
func (s *Service) keyUsed(ctx context.Context, prev Message) error {
	if prev.Status == StatusInFlight {
		prev = s.reconcile(ctx, prev)
	}
	if prev.Status == StatusInFlight {
		return apierr.Newf(apierr.InFlight, "The turn with this idempotency key is still running; read it at GET /v1/jobs/%s.", prev.JobID).
			With("message_id", prev.ID).With("job_id", prev.JobID)
	}
	e := apierr.Newf(apierr.KeySettled, "The turn with this idempotency key settled; read it in the thread or at GET /v1/jobs/%s, and send the next turn with a new key.", prev.JobID).
		With("message_id", prev.ID).With("job_id", prev.JobID)
	if j, err := s.Jobs.GetByID(ctx, prev.AccountID, prev.JobID); err == nil && j.Settled() {
		e = e.WithCharged(j.ChargedState())
	}
	return e
}

// Finish waits for the turn to settle and records the assistant's answer.
func (t *Turn) Finish(ctx context.Context, s *Service) (Outcome, error) {
	out, err := t.Call.Result(ctx)
	if t.Call.Job.Settled() {
		t.Assistant = s.finish(context.WithoutCancel(ctx), t.Assistant, t.Call.Job)
	}
	return out, err
}
