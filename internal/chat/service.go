package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/runners"
)

// Service runs language-model calls through the jobs engine and keeps conversations.
type Service struct {
	Jobs    *jobs.Service
	Catalog *catalog.Catalog
	// Runners holds the language models that have a runner; a model without one answers
	// chat_not_configured (503) before anything is charged.
	Runners runners.Registry
	Hub     *Hub
	Store   Store // conversations; nil: /v1/chat answers chat_not_configured
	Now     func() time.Time
}

// CallRequest is one call to a language model.
type CallRequest struct {
	Principal      *auth.Principal
	Model          string
	Input          any    // catalog.ChatInput or catalog.EmbeddingsInput
	IdempotencyKey string // empty: minted
	JobID          string // empty: minted (jobs.NewJobID)
	Stream         bool   // collect the text as it is written
}

// Model returns the language model of kind named slug: unknown_model (carrying allowed) for
// any other name, chat_not_configured when it has no runner.
func (s *Service) Model(kind, slug string) (*catalog.Model, error) {
	m, ok := s.Catalog.LanguageModel(slug)
	if !ok || m.Language().Kind != kind {
		return nil, apierr.Newf(apierr.UnknownModel, "Unknown model %q; use one of the %s models.", apierr.Excerpt(slug), kind).
			With("allowed", s.Catalog.LanguageSlugs(kind))
	}
	if _, err := s.Runners.For(slug); err != nil {
		return nil, apierr.Newf(apierr.ChatNotConfigured, "Model %s is not configured on this deployment: the operator has not connected it to a model server.", slug)
	}
	return m, nil
}

// Ready answers chat_not_configured (503) when no language model of kind ("": any kind) has a
// runner on this deployment (DESIGN 36): the routes of that kind refuse before reading the
// request, charging nothing.
func (s *Service) Ready(kind string) error {
	for _, m := range s.Catalog.LanguageModels(kind) {
		if _, err := s.Runners.For(m.Slug); err == nil {
			return nil
		}
	}
	what := "Language models are"
	switch kind {
	case catalog.KindChat:
		what = "Chat models are"
	case catalog.KindEmbeddings:
		what = "Embeddings models are"
	}
	return apierr.Newf(apierr.ChatNotConfigured, "%s not configured on this deployment: the operator has not connected them to a model server.", what)
}

// honoured refuses a chat setting the model's runner cannot honour (OpenAI's 400 with its
// param), before anything is charged: a reference model writes prose, not JSON, reads no
// images and calls no tools; an upstream reads images and calls tools only when the operator
// said its model does.
func (s *Service) honoured(m *catalog.Model, input any) error {
	in, ok := input.(catalog.ChatInput)
	if !ok {
		return nil
	}
	rn, _ := s.Runners.For(m.Slug)
	h, _ := rn.(interface{ Honours(string) bool })
	honours := func(setting string) bool { return h != nil && h.Honours(setting) }
	if len(in.ResponseFormat) > 0 && !honours("response_format") {
		return apierr.Newf(apierr.InvalidBody, "response_format is not supported by model %s on this deployment; ask for text.", m.Slug).
			With("param", "response_format")
	}
	usesTools := len(in.Tools) > 0
	for _, msg := range in.Messages {
		usesTools = usesTools || len(msg.ToolCalls) > 0 || msg.Role == "tool"
	}
	if usesTools && !honours("tools") {
		return apierr.Newf(apierr.InvalidBody, "Model %s does not call tools on this deployment; send no tools.", m.Slug).With("param", "tools")
	}
	for i, msg := range in.Messages {
		if len(msg.Images) > 0 && !honours("images") {
			return apierr.Newf(apierr.InvalidBody, "Model %s does not read images on this deployment; send text.", m.Slug).
				With("param", fmt.Sprintf("messages[%d].content", i))
		}
	}
	return nil
}

// Call is a submitted call: its job, and the text it writes when it streams.
type Call struct {
	Job   jobs.Job
	Model *catalog.Model // the job's model: for a replay, the first call's
	// Kind is the kind of the job's model: the kind asked for, or for a replay the first
	// call's, which may be another (a key is the account's across products, DESIGN 31); ""
	// when the key's job is not a language model's. A surface answers a replay of another
	// kind as that kind's answer, never reads it as its own.
	Kind     string
	Replayed bool
	Balance  int64 // credits_remaining after the charge
	svc      *Service
	sub      *Subscription
	changes  <-chan struct{}
	unsub    func()
	checked  bool
	recheck  *time.Ticker
}

// Start quotes, charges and starts a call. A key already used answers the first call
// (Replayed), charging nothing.
func (s *Service) Start(ctx context.Context, kind string, r CallRequest) (*Call, error) {
	m, err := s.Model(kind, r.Model)
	if err != nil {
		return nil, err
	}
	if err := s.honoured(m, r.Input); err != nil {
		return nil, err
	}
	body, err := json.Marshal(r.Input)
	if err != nil {
		return nil, err
	}
	jobID := r.JobID
	if jobID == "" {
		jobID = jobs.NewJobID(m.Product)
	}
	c := &Call{Model: m, svc: s}
	if r.Stream {
		// The text is collected from the first piece the model writes: the subscription, by
		// the job's id, is made before the submit.
		c.sub = s.Hub.Subscribe(jobID)
	}
	res, err := s.Jobs.Submit(ctx, jobs.SubmitRequest{Principal: r.Principal, Model: m, Body: body, IdempotencyKey: r.IdempotencyKey, JobID: jobID})
	if err != nil {
		c.Close()
		return nil, err
	}
	if res.Unresolved {
		c.Close()
		// The process is stopping: the charge stands and the turn runs again when its lease
		// runs out; the same key reads it back.
		return nil, apierr.New(apierr.DispatchUnresolved)
	}
	if c.sub != nil && res.Job.ID != jobID {
		// A replay: the first call's job may have written part of its text already, so the
		// answer is read whole once that job settles.
		c.sub.Close()
		c.sub = nil
	}
	c.Job, c.Replayed, c.Balance, c.Kind = res.Job, res.Replayed, res.Balance, kind
	if res.Replayed && res.Job.Model != m.Slug {
		c.Model, c.Kind = nil, ""
		if first, ok := s.Catalog.LanguageModel(res.Job.Model); ok {
			c.Model, c.Kind = first, first.Language().Kind
		}
	}
	if c.sub != nil {
		// Next wakes on the settlement; Result waits for it through the engine.
		c.changes, c.unsub = s.Jobs.Changes(res.Job.RequestID)
	}
	return c, nil
}

// Close releases the call's subscriptions.
func (c *Call) Close() {
	if c.recheck != nil {
		c.recheck.Stop()
	}
	if c.sub != nil {
		c.sub.Close()
	}
	if c.unsub != nil {
		c.unsub()
	}
}

// Next waits for text or for the job to settle: it answers the pieces written since the
// last call, and whether the job has settled (no more text will come). It wakes on the
// settlement, which the engine signals once it committed; the job is read again once a second
// too, should a signal ever be missed.
func (c *Call) Next(ctx context.Context) ([]string, bool, error) {
	if c.sub == nil {
		_, err := c.Result(ctx)
		return nil, true, err
	}
	for {
		if !c.checked {
			c.checked = true
			if settled, err := c.settled(ctx); err != nil || settled {
				return c.sub.Drain(), true, err
			}
		}
		if c.recheck == nil {
			c.recheck = time.NewTicker(time.Second)
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-c.sub.Ready():
			if p := c.sub.Drain(); len(p) > 0 {
				return p, false, nil
			}
		case <-c.changes:
			c.checked = false
		case <-c.recheck.C:
			c.checked = false
		}
	}
}

func (c *Call) settled(ctx context.Context) (bool, error) {
	j, err := c.svc.Jobs.Get(ctx, c.Job.AccountID, c.Job.RequestID)
	if err != nil {
		return false, err
	}
	c.Job = j
	return j.Settled(), nil
}

// Outcome is a settled call.
type Outcome struct {
	Job          jobs.Job
	Content      string
	ToolCalls    []any // the calls the model made (the protocol's tool_calls), finish reason tool_calls
	FinishReason string
	Embeddings   [][]float64
	Usage        catalog.Usage
}

// Result waits for the call to settle and answers its outcome, or the catalogued error of a
// call that failed (charge reversed): the model's refusal (content_policy), its parser's
// refusal (invalid_input), or chat_start_failed. A replay of a job that is not a language
// model's answers in_flight or key_settled naming it (KeyTaken): it has no outcome to read.
func (c *Call) Result(ctx context.Context) (Outcome, error) {
	if c.Model == nil {
		return Outcome{Job: c.Job}, KeyTaken(c.Job)
	}
	wait := time.Duration(c.Model.Lifecycle.StallCeilingSeconds)*time.Second + 30*time.Second
	j := c.Job
	if !j.Settled() {
		var err error
		if j, _, err = c.svc.Jobs.Wait(ctx, j.AccountID, j.RequestID, wait); err != nil {
			return Outcome{}, err
		}
		c.Job = j
	}
	return OutcomeOf(j)
}

// OutcomeOf reads a settled language-model job.
func OutcomeOf(j jobs.Job) (Outcome, error) {
	if !j.Settled() {
		return Outcome{}, apierr.Newf(apierr.InFlight, "The call is still running.")
	}
	if j.Outcome != jobs.Succeeded {
		return Outcome{Job: j}, FailureError(j)
	}
	o := Outcome{Job: j, FinishReason: "stop"}
	if j.Result == nil {
		return o, nil
	}
	d := j.Result.Document
	o.Content, _ = d["content"].(string)
	o.ToolCalls, _ = d["tool_calls"].([]any)
	if f, ok := d["finish_reason"].(string); ok {
		o.FinishReason = f
	}
	o.Usage = catalog.Usage{InputTokens: int(j.Result.Metrics["input_tokens"]), OutputTokens: int(j.Result.Metrics["output_tokens"])}
	if vs, ok := d["embeddings"].([]any); ok {
		for _, v := range vs {
			o.Embeddings = append(o.Embeddings, floats(v))
		}
	}
	return o, nil
}

func floats(v any) []float64 {
	switch x := v.(type) {
	case []float64:
		return x
	case []any:
		out := make([]float64, len(x))
		for i, e := range x {
			switch n := e.(type) {
			case float64:
				out[i] = n
			case json.Number:
				out[i], _ = n.Float64()
			}
		}
		return out
	}
	return nil
}

// FailureError is the catalogued error of a job that did not succeed, saying what is true of
// it: an embeddings call failed, a chat model failed before answering, or stopped partway
// through an answer it had begun to write (chat_start_failed, refunded, in every case).
func FailureError(j jobs.Job) error {
	switch j.ErrorCode {
	case string(apierr.ContentPolicy):
		msg := "The model declined to answer this request."
		if len(j.ErrorDetail) > 0 {
			msg = j.ErrorDetail[0].Msg
		}
		return apierr.Newf(apierr.ContentPolicy, "%s", msg)
	case string(apierr.InvalidInput):
		msg := "The model could not read the request."
		if len(j.ErrorDetail) > 0 {
			msg = j.ErrorDetail[0].Msg
		}
		return &ParserRefusal{Err: apierr.Newf(apierr.InvalidInput, "%s", msg)}
	}
	what := "The model failed before answering"
	switch {
	case j.Product == catalog.ProductEmbeddings:
		what = "The embeddings model failed"
	case j.Metrics["output_tokens"] > 0:
		// Part of the answer was written (and streamed to a caller reading it) before the run
		// broke off: the upstream's stream broke, or the stall ceiling passed.
		what = "The model stopped partway through its answer"
	}
	msg := what + "; the charge was reversed."
	if j.ErrorMessage != "" {
		msg = what + ": " + strings.TrimSuffix(j.ErrorMessage, ".") + ". The charge was reversed."
	}
	e := apierr.Newf(apierr.ChatStartFailed, "%s", msg).With("job_id", j.ID)
	if after := j.Metrics[RetryAfterMetric]; after > 0 {
		// The model server was busy and said when to come back: a new call may succeed then
		// (this job's key replays its failure).
		e.WithRetryAfter(int(after))
	}
	return e
}

// RetryAfterMetric is the metric a language-model runner leaves on a run that failed because
// its model server was busy (a 429 or 5xx, unreachable, cut off), in seconds the server asked
// to wait (Retry-After), at least 1: a new call may succeed then.
const RetryAfterMetric = "retry_after_seconds"

// ParserRefusal is a language model's own parser refusing the request as written: 422
// without detail on the compatibility surface, invalid_input elsewhere.
type ParserRefusal struct{ Err *apierr.Error }

func (p *ParserRefusal) Error() string { return p.Err.Error() }

// Unwrap lets apierr.As find the catalogued error.
func (p *ParserRefusal) Unwrap() error { return p.Err }

// MintKey mints an idempotency key for a call that sent none: the time in milliseconds, then
// 64 random bits, so that keys minted one after another sit side by side in the indexes that
// hold them.
func MintKey() string {
	var b [14]byte
	_, _ = rand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	return "k" + hex.EncodeToString(b[:])
}
