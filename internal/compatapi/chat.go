package compatapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// MaxMessageChars is the longest message a chat call carries (spec 02 "Limits").
const MaxMessageChars = 24000

// MaxStop is the most stop sequences a request sends, the protocol's own bound.
const MaxStop = 4

// content is a message content: a string, or a list of parts: text parts, and image parts
// (chat completions' image_url, the Responses protocol's input_image) naming an http(s) URL, an
// upload's read_url say, or a data: URL.
type content struct {
	text   string
	images []string
}

// contentPart is one part of a content list.
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"` // {"url": …} in chat completions, a string in Responses
}

func (c *content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*c = content{}
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.text)
	}
	var parts []contentPart
	if err := json.Unmarshal(b, &parts); err != nil {
		return shapeRefusal{msg: "content must be a string or a list of text and image parts."}
	}
	var sb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			sb.WriteString(p.Text)
		case "image_url", "input_image":
			u, err := imageURL(p.ImageURL)
			if err != nil {
				return err
			}
			c.images = append(c.images, u)
		default:
			return shapeRefusal{msg: fmt.Sprintf("content part type %q is not offered; send text or images.", apierr.Excerpt(p.Type))}
		}
	}
	c.text = sb.String()
	return nil
}

// imageURL reads an image part's URL: an http(s) URL or a data: URL of an image.
func imageURL(raw json.RawMessage) (string, error) {
	var u string
	if json.Unmarshal(raw, &u) != nil {
		var obj struct {
			URL string `json:"url"`
		}
		_ = json.Unmarshal(raw, &obj)
		u = obj.URL
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "data:image/") {
		return "", shapeRefusal{msg: "an image part needs image_url: an http(s) URL (an upload's read_url, say) or a data:image/ URL."}
	}
	return u, nil
}

// shapeRefusal is a field's own refusal of its value while the body is decoded, written for a
// person: it is shown as it stands, where the decoder's own errors are rewritten (ShapeError),
// naming param when the field knows its own name.
type shapeRefusal struct{ msg, param string }

func (s shapeRefusal) Error() string { return s.msg }

// refusal is the surface's invalid_body of s.
func (s shapeRefusal) refusal() *apierr.Error {
	e := apierr.Newf(apierr.InvalidBody, "%s", s.msg)
	if s.param != "" {
		e = e.With("param", s.param)
	}
	return e
}

// stopList is `stop`: a string or a list of strings (at most MaxStop, chatRequest.input).
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return shapeRefusal{msg: "stop must be a string or a list of strings.", param: "stop"}
	}
	*s = many
	return nil
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    content         `json:"content"`
		ToolCalls  json.RawMessage `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
	TopP                *float64 `json:"top_p"`
	Seed                *int64   `json:"seed"`
	FrequencyPenalty    *float64 `json:"frequency_penalty"`
	PresencePenalty     *float64 `json:"presence_penalty"`
	Stop                stopList `json:"stop"`
	N                   *int     `json:"n"`
	ReasoningEffort     string   `json:"reasoning_effort"`
	Stream              bool     `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	User json.RawMessage `json:"user"`
	// response_format: text asks for nothing; JSON goes to a model that honours it.
	ResponseFormat json.RawMessage `json:"response_format"`
	// Function tools: passed to a model that honours them (chat.Service refuses them otherwise).
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	// Settings of the protocol that no model here honours: refused with their param.
	Functions    json.RawMessage `json:"functions"`
	FunctionCall json.RawMessage `json:"function_call"`
	Logprobs     json.RawMessage `json:"logprobs"`
	LogitBias    json.RawMessage `json:"logit_bias"`
	// Output other than text: the models here write text alone.
	Modalities json.RawMessage `json:"modalities"`
	Audio      json.RawMessage `json:"audio"`
}

// sampling checks the sampling settings' ranges, the protocol's own.
func (req chatRequest) sampling() error {
	for _, s := range []struct {
		param    string
		v        *float64
		low, top float64
	}{
		{"temperature", req.Temperature, 0, 2},
		{"top_p", req.TopP, 0, 1},
		{"frequency_penalty", req.FrequencyPenalty, -2, 2},
		{"presence_penalty", req.PresencePenalty, -2, 2},
	} {
		if s.v != nil && (*s.v < s.low || *s.v > s.top) {
			return apierr.Newf(apierr.InvalidBody, "%s must be a number from %g to %g.", s.param, s.low, s.top).With("param", s.param)
		}
	}
	return nil
}

// responseFormat reads response_format: nil for text (or none), else the JSON mode or schema
// asked for, passed to a model that honours it (chat.Service refuses it for one that cannot).
func responseFormat(raw json.RawMessage) (json.RawMessage, error) {
	c := compact(raw)
	if c == "" || c == "null" {
		return nil, nil
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, apierr.Newf(apierr.InvalidBody, "response_format must be an object with a type: text, json_object or json_schema.").With("param", "response_format")
	}
	switch {
	case f.Type == "text":
		return nil, nil
	case f.Type == "json_object":
		return json.RawMessage(c), nil
	case f.Type == "json_schema" && f.JSONSchema != nil && f.JSONSchema.Name != "":
		return json.RawMessage(c), nil
	case f.Type == "json_schema":
		return nil, apierr.Newf(apierr.InvalidBody, "response_format.json_schema needs a name and a schema.").With("param", "response_format.json_schema")
	}
	return nil, apierr.Newf(apierr.InvalidBody, "response_format.type must be text, json_object or json_schema.").With("param", "response_format.type")
}

// toolsOf reads tools and tool_choice: nil for none, else the function tools and the choice
// as sent, passed to a model that honours tools.
func toolsOf(rawTools, rawChoice json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	choice := compact(rawChoice)
	if t := compact(rawTools); t == "" || t == "null" || t == "[]" {
		if choice != "" && choice != "null" && choice != `"none"` && choice != `"auto"` {
			return nil, nil, apierr.Newf(apierr.InvalidBody, "tool_choice asks for a tool, but no tools were sent.").With("param", "tool_choice")
		}
		return nil, nil, nil
	}
	var tools []struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(rawTools, &tools) != nil {
		return nil, nil, apierr.Newf(apierr.InvalidBody, "tools must be a list of function tools.").With("param", "tools")
	}
	for i, t := range tools {
		if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return nil, nil, apierr.Newf(apierr.InvalidBody, "tools[%d] must be a function tool with a name.", i).With("param", fmt.Sprintf("tools[%d]", i))
		}
	}
	var out json.RawMessage
	if choice != "" && choice != "null" {
		out = json.RawMessage(choice)
	}
	return json.RawMessage(compact(rawTools)), out, nil
}

// toolMessage checks a message's part in a tool exchange: only an assistant message carries
// tool_calls (answered as sent), and a tool message names the call it answers.
func toolMessage(i int, role string, rawCalls json.RawMessage, callID string) (json.RawMessage, error) {
	calls := compact(rawCalls)
	if calls == "null" || calls == "[]" {
		calls = ""
	}
	switch {
	case calls != "" && role != "assistant":
		return nil, apierr.Newf(apierr.InvalidBody, "messages[%d]: only an assistant message carries tool_calls.", i).With("param", fmt.Sprintf("messages[%d].tool_calls", i))
	case calls != "" && calls[0] != '[':
		return nil, apierr.Newf(apierr.InvalidBody, "messages[%d].tool_calls must be a list.", i).With("param", fmt.Sprintf("messages[%d].tool_calls", i))
	case role == "tool" && callID == "":
		return nil, apierr.Newf(apierr.InvalidBody, "messages[%d].tool_call_id is required: name the call this message answers.", i).With("param", fmt.Sprintf("messages[%d].tool_call_id", i))
	}
	if calls == "" {
		return nil, nil
	}
	return json.RawMessage(calls), nil
}

// setting is a protocol setting no model here honours, and the values that ask for nothing.
type setting struct {
	param string
	raw   json.RawMessage
	idle  []string
}

// refuseUnoffered answers the first setting sent with a value that asks for something, as
// OpenAI's 400 with its param: accepting it without effect would answer something the caller
// did not ask for.
func refuseUnoffered(settings []setting) error {
	for _, s := range settings {
		raw := compact(s.raw)
		if raw == "" || slices.Contains(s.idle, raw) {
			continue
		}
		return apierr.Newf(apierr.InvalidBody, "%s is not supported by the models of this service.", s.param).With("param", s.param)
	}
	return nil
}

// unoffered answers the first setting of req that no model here honours.
func (req chatRequest) unoffered() error {
	if err := refuseUnoffered([]setting{
		{"functions", req.Functions, []string{"null", "[]"}},
		{"function_call", req.FunctionCall, []string{"null", `"none"`, `"auto"`}},
		{"logprobs", req.Logprobs, []string{"null", "false"}},
		{"logit_bias", req.LogitBias, []string{"null", "{}"}},
		{"modalities", req.Modalities, []string{"null", `["text"]`}},
		{"audio", req.Audio, []string{"null"}},
	}); err != nil {
		return err
	}
	return checkUser(req.User)
}

// checkUser refuses a `user` that is not a string (the protocol's end-user id).
func checkUser(raw json.RawMessage) error {
	if r := compact(raw); r != "" && r != "null" && r[0] != '"' {
		return apierr.Newf(apierr.InvalidBody, "user must be a string.").With("param", "user")
	}
	return nil
}

// compact is a JSON value without its insignificant spaces ("" when absent).
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// decode reads the body as one JSON object into v: invalid_json or invalid_body otherwise.
func decode(r *http.Request, v any) error {
	b, err := httpapi.ReadBody(r)
	if err != nil {
		return err
	}
	if err := httpapi.CheckObject(b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		var own shapeRefusal
		if errors.As(err, &own) {
			return own.refusal()
		}
		return httpapi.ShapeError(err)
	}
	return nil
}

// efforts maps the protocol's reasoning_effort onto the service's effort.
var efforts = map[string]string{"": "", "low": "light", "minimal": "light", "medium": "balanced", "high": "deep",
	"light": "light", "balanced": "balanced", "deep": "deep"}

func effortOf(s string) (string, error) {
	e, ok := efforts[s]
	if !ok {
		return "", apierr.Newf(apierr.UnknownEffort, "reasoning_effort %q is not low, medium or high (light, balanced, deep).", s).
			With("allowed", catalog.Efforts)
	}
	return e, nil
}

func checkMessage(i int, s string) error {
	if n := utf8.RuneCountInString(s); n > MaxMessageChars {
		return apierr.Newf(apierr.TextTooLong, "messages[%d] is %d characters; a message holds at most %d.", i, n, MaxMessageChars).With("max", MaxMessageChars).
			With("param", fmt.Sprintf("messages[%d].content", i))
	}
	return nil
}

func (req chatRequest) input() (catalog.ChatInput, error) {
	if req.Model == "" {
		return catalog.ChatInput{}, apierr.Newf(apierr.UnknownModel, "model is required.")
	}
	if req.N != nil && *req.N != 1 {
		return catalog.ChatInput{}, apierr.Newf(apierr.InvalidBody, "n must be 1: one choice per request.").With("param", "n")
	}
	if len(req.Stop) > MaxStop {
		return catalog.ChatInput{}, apierr.Newf(apierr.InvalidBody, "stop holds at most %d sequences; this one holds %d.", MaxStop, len(req.Stop)).With("param", "stop")
	}
	if err := req.sampling(); err != nil {
		return catalog.ChatInput{}, err
	}
	if err := req.unoffered(); err != nil {
		return catalog.ChatInput{}, err
	}
	format, err := responseFormat(req.ResponseFormat)
	if err != nil {
		return catalog.ChatInput{}, err
	}
	tools, choice, err := toolsOf(req.Tools, req.ToolChoice)
	if err != nil {
		return catalog.ChatInput{}, err
	}
	in := catalog.ChatInput{Temperature: req.Temperature, TopP: req.TopP, Stop: req.Stop, Seed: req.Seed,
		FrequencyPenalty: req.FrequencyPenalty, PresencePenalty: req.PresencePenalty, ResponseFormat: format, Tools: tools, ToolChoice: choice}
	for i, m := range req.Messages {
		calls, err := toolMessage(i, m.Role, m.ToolCalls, m.ToolCallID)
		if err != nil {
			return in, err
		}
		if m.Content.text == "" && len(m.Content.images) == 0 && m.Role != "assistant" {
			return in, apierr.Newf(apierr.InvalidBody, "messages[%d].content is required.", i).With("param", fmt.Sprintf("messages[%d].content", i))
		}
		if err := checkMessage(i, m.Content.text); err != nil {
			return in, err
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		if len(m.Content.images) > 0 && role != "user" {
			return in, apierr.Newf(apierr.InvalidBody, "messages[%d]: only a user message may hold images.", i).With("param", fmt.Sprintf("messages[%d].content", i))
		}
		in.Messages = append(in.Messages, catalog.Message{Role: role, Content: m.Content.text, Images: m.Content.images,
			ToolCalls: calls, ToolCallID: m.ToolCallID})
	}
	if req.MaxCompletionTokens != nil {
		in.MaxTokens = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		in.MaxTokens = *req.MaxTokens
	}
	if (req.MaxCompletionTokens != nil || req.MaxTokens != nil) && in.MaxTokens <= 0 {
		param := "max_tokens"
		if req.MaxCompletionTokens != nil {
			param = "max_completion_tokens"
		}
		return in, apierr.Newf(apierr.InvalidBody, "%s must be a positive integer.", param).With("param", param)
	}
	in.Effort, err = effortOf(req.ReasoningEffort)
	return in, err
}

// chatCompletions answers the protocol's chat completions. A refusal names the output budget as
// the caller sent it: the checks shared with the other routes name max_tokens, spelled
// max_completion_tokens when the request sent that (it is the budget then, whatever max_tokens
// says), as asResponses spells max_output_tokens.
func (h *Handler) chatCompletions() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		var req chatRequest
		err := h.chatCompletion(w, r, p, &req)
		if err != nil && req.MaxCompletionTokens != nil {
			return respell(err, completionNames.Replace, completionNames.Replace)
		}
		return err
	}
}

// completionNames spells max_tokens as max_completion_tokens.
var completionNames = strings.NewReplacer("max_tokens", "max_completion_tokens")

func (h *Handler) chatCompletion(w http.ResponseWriter, r *http.Request, p *auth.Principal, req *chatRequest) error {
	if err := decode(r, req); err != nil {
		return err
	}
	if len(req.Messages) == 0 {
		return apierr.Newf(apierr.InvalidBody, "messages must hold at least one message.").With("param", "messages")
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	call, err := h.start(w, r, catalog.KindChat, chat.CallRequest{Principal: p, Model: req.Model, Input: in, Stream: req.Stream}, "messages")
	if call == nil {
		return err
	}
	defer call.Close()
	if req.Stream {
		usage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		return h.stream(w, r, call, usage, chatChunks{id: "chatcmpl-" + call.Job.ID, model: call.Job.Model, created: created(call.Job)})
	}
	out, err := call.Result(r.Context())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, r, http.StatusOK, completionOf(out))
	return nil
}

// start starts a call of kind under the request's Idempotency-Key and names its job in the
// headers. A refusal (its text too long named as field) or a key that answers a job of another
// kind (answered here, as that job) returns no call; otherwise the caller closes the call.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, kind string, req chat.CallRequest, field string) (*chat.Call, error) {
	req.IdempotencyKey = idempotencyKey(r)
	call, err := h.Chat.Start(r.Context(), kind, req)
	if err != nil {
		return nil, promptParam(err, field)
	}
	setCallHeaders(w, call) // a failure answered after this names its job too
	if call.Kind != kind {
		defer call.Close()
		return nil, answerOtherKind(w, r, call)
	}
	return call, nil
}

// promptParam names the field of a chat call's refusal for a prompt over the model's context
// window (input_too_long, which names no field of its own): the whole conversation, messages
// (input on the Responses protocol, prompt on completions).
func promptParam(err error, field string) error {
	if e, ok := apierr.As(err); ok && e.Code == apierr.InputTooLong && e.Fields["param"] == nil {
		e.With("param", field)
	}
	return err
}

// completionOf is a settled chat call as the protocol's chat.completion: its job's id and
// model (a replay answers the first call's, whatever model the replay names).
func completionOf(out chat.Outcome) chatCompletion {
	j := out.Job
	return chatCompletion{ID: "chatcmpl-" + j.ID, Object: "chat.completion", Created: created(j), Model: j.Model,
		Choices: []chatChoice{{Message: assistantMessage(out), FinishReason: finishReason(out.FinishReason)}},
		Usage:   usageOf(out.Usage)}
}

// chatCompletion is the protocol's chat.completion object.
type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             usage        `json:"usage"`
	SystemFingerprint *string      `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type chatMessage struct {
	Role      string  `json:"role"`
	Content   *string `json:"content"` // null for a message that only called tools
	Refusal   *string `json:"refusal"`
	ToolCalls []any   `json:"tool_calls,omitempty"`
}

// assistantMessage is the model's answer: its text, and the tools it called.
func assistantMessage(out chat.Outcome) chatMessage {
	m := chatMessage{Role: "assistant", Content: &out.Content, ToolCalls: out.ToolCalls}
	if out.Content == "" && len(out.ToolCalls) > 0 {
		m.Content = nil
	}
	return m
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// finishReason keeps to the protocol's values.
func finishReason(f string) string {
	switch f {
	case "length", "content_filter", "stop", "tool_calls":
		return f
	}
	return "stop"
}

func usageOf(u catalog.Usage) usage {
	return usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

// setCallHeaders names the job behind the answer (readable at GET /v1/jobs/{id}) and says
// when the answer is a replay of the first call with the same key.
func setCallHeaders(w http.ResponseWriter, call *chat.Call) {
	w.Header().Set("X-Job-Id", call.Job.ID)
	if call.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
}

type completionRequest struct {
	Model            string          `json:"model"`
	Prompt           json.RawMessage `json:"prompt"`
	MaxTokens        *int            `json:"max_tokens"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	Seed             *int64          `json:"seed"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	User             json.RawMessage `json:"user"`
	Stop             stopList        `json:"stop"`
	N                *int            `json:"n"`
	Stream           bool            `json:"stream"`
	StreamOptions    *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// Settings of the protocol that no model here honours: refused with their param.
	Logprobs  json.RawMessage `json:"logprobs"`
	LogitBias json.RawMessage `json:"logit_bias"`
	Echo      json.RawMessage `json:"echo"`
	BestOf    json.RawMessage `json:"best_of"`
	Suffix    json.RawMessage `json:"suffix"`
}

// unoffered answers the first setting of req that no model here honours, as chat
// completions refuses its own: 400 with its param, nothing charged.
func (req completionRequest) unoffered() error {
	return refuseUnoffered([]setting{
		{"logprobs", req.Logprobs, []string{"null"}},
		{"logit_bias", req.LogitBias, []string{"null", "{}"}},
		{"echo", req.Echo, []string{"null", "false"}},
		{"best_of", req.BestOf, []string{"null", "1"}},
		{"suffix", req.Suffix, []string{"null", `""`}},
	})
}

// completions is the legacy text completion: the prompt is one user message.
func (h *Handler) completions() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		var req completionRequest
		if err := decode(r, &req); err != nil {
			return err
		}
		if err := req.unoffered(); err != nil {
			return err
		}
		prompt, err := promptOf(req.Prompt)
		if err != nil {
			return err
		}
		cr := chatRequest{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed,
			FrequencyPenalty: req.FrequencyPenalty, PresencePenalty: req.PresencePenalty, User: req.User, Stop: req.Stop, N: req.N}
		in, err := cr.input()
		if err != nil {
			return err
		}
		if err := checkMessage(0, prompt); err != nil {
			e, _ := apierr.As(err)
			return e.With("param", "prompt")
		}
		in.Messages = []catalog.Message{{Role: "user", Content: prompt}}
		call, err := h.start(w, r, catalog.KindChat, chat.CallRequest{Principal: p, Model: req.Model, Input: in, Stream: req.Stream}, "prompt")
		if call == nil {
			return err
		}
		defer call.Close()
		id := "cmpl-" + call.Job.ID
		if req.Stream {
			usage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
			return h.stream(w, r, call, usage, textChunks{id: id, model: call.Job.Model, created: created(call.Job)})
		}
		out, err := call.Result(r.Context())
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{
			"id": id, "object": "text_completion", "created": created(call.Job), "model": call.Job.Model,
			"choices": []any{map[string]any{"text": out.Content, "index": 0, "logprobs": nil, "finish_reason": finishReason(out.FinishReason)}},
			"usage":   usageOf(out.Usage),
		})
		return nil
	}
}

func promptOf(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", apierr.Newf(apierr.PromptRequired, "prompt is required.")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil || len(list) != 1 {
		return "", apierr.Newf(apierr.InvalidBody, "prompt must be a string (or a list of one string).").With("param", "prompt")
	}
	return list[0], nil
}
