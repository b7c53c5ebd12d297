package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/tokens"
)

// Language model kinds.
const (
	KindChat       = "chat"
	KindEmbeddings = "embeddings"
)

// Products of language-model jobs.
const (
	ProductChat       = "chat"
	ProductEmbeddings = "embeddings"
)

// Runners a language model entry may name.
const (
	RunnerReference = "reference" // the built-in reference models (CPU, deterministic)
	RunnerOpenAI    = "openai"    // an OpenAI-compatible upstream (vLLM, llama.cpp server, Ollama)
	RunnerNone      = "none"      // no runner: chat_not_configured
)

// Effort values of a chat turn.
var Efforts = []string{"light", "balanced", "deep"}

// Token accounting of the chat protocol: each message costs its content plus a fixed
// framing (role and separators), and every prompt is primed with a reply header.
const (
	tokensPerMessage = 4
	tokensPerPrompt  = 2
)

// LanguageFile is a language model's catalogue entry (DESIGN 32): priced per 1,000 input
// and output tokens, kept apart from the nine queue-host models (it has no address there).
type LanguageFile struct {
	Slug                string        `json:"slug"`
	Name                string        `json:"name"`
	Kind                string        `json:"kind"` // chat or embeddings
	ContextWindow       int           `json:"context_window"`
	OutputLimit         int           `json:"output_limit,omitempty"` // chat: most output tokens of one turn
	MaxInputs           int           `json:"max_inputs,omitempty"`   // embeddings: most strings per request
	Dimensions          int           `json:"dimensions,omitempty"`   // embeddings: vector length
	InputPer1000        string        `json:"credits_per_1000_input_tokens"`
	OutputPer1000       string        `json:"credits_per_1000_output_tokens,omitempty"`
	StallCeilingSeconds int           `json:"stall_ceiling_seconds"`
	Runner              string        `json:"runner"` // reference, openai or none
	Upstream            *UpstreamFile `json:"upstream,omitempty"`
}

// UpstreamFile names an OpenAI-compatible server for one model. The key is read from an
// environment variable so the catalogue file holds no secret.
type UpstreamFile struct {
	BaseURL   string `json:"base_url"`
	Model     string `json:"model"` // the upstream's own model name
	APIKeyEnv string `json:"api_key_env,omitempty"`
	Images    bool   `json:"images,omitempty"` // the upstream's model reads images
	Tools     bool   `json:"tools,omitempty"`  // the upstream's model calls function tools
}

// Language is a built language model.
type Language struct {
	LanguageFile
	in, out *big.Rat // credits per token
}

// Product is the jobs product of the model's calls.
func (l *Language) Product() string {
	if l.Kind == KindEmbeddings {
		return ProductEmbeddings
	}
	return ProductChat
}

// Language returns the language side of a model (nil for the nine queue-host models).
func (m *Model) Language() *Language { return m.lang }

func buildLanguage(lf LanguageFile) (*Model, error) {
	if lf.Slug == "" {
		return nil, errors.New("slug is required")
	}
	l := &Language{LanguageFile: lf}
	switch lf.Kind {
	case KindChat:
		if err := inRange("output_limit", int64(lf.OutputLimit), 1, MaxTokens); err != nil {
			return nil, err
		}
	case KindEmbeddings:
		if lf.MaxInputs <= 0 {
			return nil, errors.New("max_inputs must be positive on an embeddings model")
		}
		if err := inRange("dimensions", int64(lf.Dimensions), 1, MaxDimensions); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("kind %q is not chat or embeddings", lf.Kind)
	}
	if err := inRange("context_window", int64(lf.ContextWindow), 1, MaxTokens); err != nil {
		return nil, err
	}
	if err := inRange("stall_ceiling_seconds", int64(lf.StallCeilingSeconds), 1, MaxLimitSeconds); err != nil {
		return nil, err
	}
	switch lf.Runner {
	case RunnerReference, RunnerNone:
	case RunnerOpenAI:
		if lf.Upstream == nil || lf.Upstream.BaseURL == "" {
			return nil, errors.New("runner openai needs upstream.base_url")
		}
	default:
		return nil, fmt.Errorf("runner %q is not reference, openai or none", lf.Runner)
	}
	var err error
	if l.in, err = perToken("credits_per_1000_input_tokens", lf.InputPer1000); err != nil {
		return nil, err
	}
	out := lf.OutputPer1000
	if out == "" {
		out = "0"
	}
	if l.out, err = perToken("credits_per_1000_output_tokens", out); err != nil {
		return nil, err
	}
	scope := ScopeFile{Required: "text:write", Accepted: []string{"text:write", "chat:write"}}
	if lf.Kind == KindEmbeddings {
		scope = ScopeFile{Required: "embeddings:write", Accepted: []string{"embeddings:write"}}
	}
	m := &Model{ModelFile: ModelFile{Slug: lf.Slug, Name: lf.Name, Product: l.Product(), HostedBy: "platform", Vendor: "svc",
		State: Connected, Scope: scope, Lifecycle: Lifecycle{Queue: QueueRefuses, StallCeilingSeconds: lf.StallCeilingSeconds}},
		Address: lf.Slug, vendorState: Connected, lang: l}
	return m, nil
}

// perToken reads a price per 1,000 tokens (field names it) as the price of one token.
func perToken(field, s string) (*big.Rat, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return nil, fmt.Errorf("price %q is not a non-negative number", s)
	}
	if err := ratInRange(field, s, r, MaxPerUnit); err != nil {
		return nil, err
	}
	return r.Quo(r, big.NewRat(1000, 1)), nil
}

// LanguageModel returns the language model of a slug.
func (c *Catalog) LanguageModel(slug string) (*Model, bool) {
	m, ok := c.langBySlug[slug]
	return m, ok
}

// LanguageModels lists the language models of a kind ("" for all), in catalogue order.
func (c *Catalog) LanguageModels(kind string) []*Model {
	var out []*Model
	for _, m := range c.langs {
		if kind == "" || m.lang.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

// LanguageSlugs lists the slugs of a kind: the `allowed` of unknown_model.
func (c *Catalog) LanguageSlugs(kind string) []string {
	var out []string
	for _, m := range c.LanguageModels(kind) {
		out = append(out, m.Slug)
	}
	return out
}

// Message is one message of a chat job's input.
type Message struct {
	Role    string `json:"role"` // system, user, assistant
	Content string `json:"content"`
	// Images are the URLs (http(s) or data:) of images a user message shows, read by a model
	// whose runner takes images; each counts TokensPerImage in the quote.
	Images []string `json:"images,omitempty"`
	// ToolCalls are the calls an assistant message made (the protocol's tool_calls, as sent);
	// ToolCallID names the call a tool message answers.
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// TokensPerImage is what an image counts toward a prompt's quote: the upstream's own count
// settles the charge, never above the quote.
const TokensPerImage = 1000

// ChatInput is a chat job's input as the runner receives it.
type ChatInput struct {
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens"` // filled: the request's, or what the window leaves
	Effort      string    `json:"effort,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	TopP        *float64  `json:"top_p,omitempty"`
	Stop        []string  `json:"stop,omitempty"`
	// Settings passed to a model that honours them (an upstream); a runner that cannot refuses
	// them before any charge (chat.Service.Start).
	Seed             *int64          `json:"seed,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	ResponseFormat   json.RawMessage `json:"response_format,omitempty"` // chat completions' form
	Tools            json.RawMessage `json:"tools,omitempty"`           // function tools, as sent
	ToolChoice       json.RawMessage `json:"tool_choice,omitempty"`
	// PromptTokens is the reference tokenizer's count of Messages, the quote's input side.
	PromptTokens int `json:"prompt_tokens"`
}

// EmbeddingsInput is an embeddings job's input.
type EmbeddingsInput struct {
	Input       []string `json:"input"`
	InputTokens int      `json:"input_tokens"`
	// Dimensions is the length the caller asked its vectors shortened to (the compatibility
	// surface's `dimensions`; 0: whole), kept with the job so that a replay answers them too.
	Dimensions int `json:"dimensions,omitempty"`
}

// Usage is what a language-model run consumed, as the runner reports it.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// PromptTokens counts a conversation's tokens as the model reads it.
func PromptTokens(msgs []Message) int {
	n := tokensPerPrompt
	for _, m := range msgs {
		n += tokensPerMessage + tokens.Count(m.Content) + len(m.Images)*TokensPerImage + tokens.Count(string(m.ToolCalls))
	}
	return n
}

var roles = []string{"system", "user", "assistant", "developer", "tool"}

// validateLanguage checks a language job's input and fills it: the chat output budget, the
// token counts. Refusals are catalogued errors, decided before any charge.
func (m *Model) validateLanguage(raw []byte) (Input, error) {
	if err := languageOversized(raw); err != nil {
		return Input{}, err
	}
	l := m.lang
	var out any
	switch l.Kind {
	case KindChat:
		var in ChatInput
		if err := strictDecode(raw, &in); err != nil {
			return Input{}, apierr.Newf(apierr.InvalidBody, "The chat input is not valid: %s.", err)
		}
		if len(in.Messages) == 0 {
			return Input{}, apierr.Newf(apierr.InvalidBody, "messages must hold at least one message.")
		}
		for i, msg := range in.Messages {
			if !slices.Contains(roles, msg.Role) {
				return Input{}, apierr.Newf(apierr.InvalidBody, "messages[%d].role must be one of system, user, assistant, developer, tool.", i)
			}
		}
		if in.Effort != "" && !slices.Contains(Efforts, in.Effort) {
			return Input{}, apierr.New(apierr.UnknownEffort, "allowed", Efforts)
		}
		in.PromptTokens = PromptTokens(in.Messages) + tokens.Count(string(in.Tools))
		room := l.ContextWindow - in.PromptTokens
		if room <= 0 {
			return Input{}, apierr.Newf(apierr.InputTooLong, "The conversation is %d tokens; the model reads at most %d.", in.PromptTokens, l.ContextWindow).
				With("context_window", l.ContextWindow)
		}
		limit := min(l.OutputLimit, room)
		switch {
		case in.MaxTokens < 0:
			return Input{}, apierr.Newf(apierr.InvalidBody, "max_tokens must be a positive integer.")
		case in.MaxTokens == 0:
			in.MaxTokens = limit
		case in.MaxTokens > limit:
			return Input{}, apierr.Newf(apierr.OutputLimitReached, "max_tokens %d is over what the model can write here (%d: output limit %d, context window %d less a %d-token prompt).",
				in.MaxTokens, limit, l.OutputLimit, l.ContextWindow, in.PromptTokens).With("max", limit)
		}
		out = in
	case KindEmbeddings:
		var in EmbeddingsInput
		if err := strictDecode(raw, &in); err != nil {
			return Input{}, apierr.Newf(apierr.InputInvalid, "input must be a string or a list of strings.")
		}
		if len(in.Input) == 0 {
			return Input{}, apierr.New(apierr.InputRequired)
		}
		if len(in.Input) > l.MaxInputs {
			return Input{}, apierr.Newf(apierr.InputTooMany, "input holds %d strings; at most %d per request.", len(in.Input), l.MaxInputs).With("max", l.MaxInputs)
		}
		if in.Dimensions < 0 || (l.Dimensions > 0 && in.Dimensions > l.Dimensions) {
			return Input{}, apierr.Newf(apierr.InvalidBody, "dimensions must be a whole number from 1 to the model's length.").With("param", "dimensions")
		}
		in.InputTokens = 0
		for i, s := range in.Input {
			n := tokens.Count(s)
			if n > l.ContextWindow {
				return Input{}, apierr.Newf(apierr.InputTooLong, "input[%d] is %d tokens; the model reads at most %d.", i, n, l.ContextWindow).
					With("index", i).With("context_window", l.ContextWindow)
			}
			if s == "" {
				return Input{}, apierr.Newf(apierr.InputRequired, "input[%d] is empty.", i)
			}
			in.InputTokens += n
		}
		out = in
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Input{}, fmt.Errorf("catalog: encode language input: %w", err)
	}
	return Input{JSON: b}, nil
}

func strictDecode(raw []byte, v any) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// quoteLanguage is the most a call can cost: every prompt token and the whole output budget.
func (m *Model) quoteLanguage(in Input) (Quote, error) {
	var u Usage
	switch m.lang.Kind {
	case KindChat:
		var c ChatInput
		if err := json.Unmarshal(in.JSON, &c); err != nil {
			return Quote{}, fmt.Errorf("catalog: quote: %w", err)
		}
		u = Usage{InputTokens: c.PromptTokens, OutputTokens: c.MaxTokens}
	case KindEmbeddings:
		var e EmbeddingsInput
		if err := json.Unmarshal(in.JSON, &e); err != nil {
			return Quote{}, fmt.Errorf("catalog: quote: %w", err)
		}
		u = Usage{InputTokens: e.InputTokens}
	}
	units := big.NewRat(int64(u.InputTokens+u.OutputTokens), 1)
	return Quote{Credits: m.lang.Cost(u), Units: units, BilledUnits: units, Unit: "token"}, nil
}

// Cost is the price of usage in whole credits, rounded up.
func (l *Language) Cost(u Usage) int64 {
	c := new(big.Rat).Mul(l.in, big.NewRat(int64(u.InputTokens), 1))
	c.Add(c, new(big.Rat).Mul(l.out, big.NewRat(int64(u.OutputTokens), 1)))
	return CeilCredits(c)
}

func (c *Catalog) addLanguageModels(lfs []LanguageFile) error {
	c.langBySlug = map[string]*Model{}
	for _, lf := range lfs {
		m, err := buildLanguage(lf)
		if err != nil {
			return fmt.Errorf("catalog: language model %q: %w", lf.Slug, err)
		}
		if _, dup := c.langBySlug[m.Slug]; dup || c.bySlug[m.Slug] != nil {
			return fmt.Errorf("catalog: model %q listed twice", m.Slug)
		}
		c.langBySlug[m.Slug] = m
		c.langs = append(c.langs, m)
	}
	return nil
}
