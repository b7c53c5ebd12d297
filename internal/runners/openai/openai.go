package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/tokens"
)

// Config is one model's upstream.
type Config struct {
	BaseURL string // e.g. http://gpu-1:8000/v1
	APIKey  string // sent as Authorization: Bearer; empty sends none
	Model   string // the upstream's model name
	Kind    string // catalog.KindChat or catalog.KindEmbeddings
	Images  bool   // the upstream model reads images (chat completions' image_url parts)
	Tools   bool   // the upstream model calls function tools
	Client  *http.Client
}

// Runner calls the upstream for one model.
type Runner struct {
	cfg Config
}

// New checks cfg and builds a runner.
func New(cfg Config) (*Runner, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: base URL is required")
	}
	if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("openai: base URL %q is not http(s)", cfg.BaseURL)
	}
	if cfg.Kind != catalog.KindChat && cfg.Kind != catalog.KindEmbeddings {
		return nil, fmt.Errorf("openai: kind %q is not chat or embeddings", cfg.Kind)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Client == nil {
		// No overall timeout: a stream may last minutes; the job's stall ceiling bounds it.
		cfg.Client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 256,
			IdleConnTimeout: 90 * time.Second, ResponseHeaderTimeout: 2 * time.Minute}}
	}
	return &Runner{cfg: cfg}, nil
}

// Run calls the upstream once.
func (u *Runner) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	var res runners.Result
	var err error
	if u.cfg.Kind == catalog.KindEmbeddings {
		res, err = u.embed(ctx, job)
	} else {
		res, err = u.chat(ctx, job, env)
	}
	return noteRetry(res, err), err
}

// retryAfterMetric is chat.RetryAfterMetric: the seconds a busy model server asked a failed
// run's caller to wait before a new call, at least 1.
const retryAfterMetric = "retry_after_seconds"

// noteRetry leaves on the result of a run that failed because the model server was busy (a
// failure marked Retryable) the wait before a new call may succeed: the server's Retry-After,
// or 1 s. The job's failure then tells its caller that a new call can help.
func noteRetry(res runners.Result, err error) runners.Result {
	var f *runners.Failure
	if !errors.As(err, &f) || !f.Retryable {
		return res
	}
	after := 1
	var b *busy
	if errors.As(err, &b) && b.after > after {
		after = b.after
	}
	if res.Metrics == nil {
		res.Metrics = map[string]float64{}
	}
	res.Metrics[retryAfterMetric] = float64(after)
	return res
}

// busy is an upstream's 429 or 5xx, with the wait its Retry-After asked for (0: none).
type busy struct {
	*runners.Failure
	after int
}

func (b *busy) Unwrap() error { return b.Failure }

// retryAfter reads a Retry-After header: seconds, or an HTTP date; 0 when absent or past. A
// wait over a minute is not one a caller holds a request for: it is capped there.
func retryAfter(v string, now time.Time) int {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return min(max(n, 0), 60)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(int(t.Sub(now).Seconds()+0.999), 0), 60)
	}
	return 0
}

type chatRequest struct {
	Model            string          `json:"model"`
	Messages         []message       `json:"messages"`
	MaxTokens        int             `json:"max_tokens"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"top_p,omitempty"`
	Stop             []string        `json:"stop,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	ResponseFormat   json.RawMessage `json:"response_format,omitempty"`
	Tools            json.RawMessage `json:"tools,omitempty"`
	ToolChoice       json.RawMessage `json:"tool_choice,omitempty"`
	Stream           bool            `json:"stream"`
	StreamOptions    *streamOptions  `json:"stream_options,omitempty"`
}

// Honours reports the settings beyond sampling that this runner passes on: an
// OpenAI-compatible server takes response_format (JSON mode and JSON schemas), and images
// when the operator said its model reads them.
func (u *Runner) Honours(setting string) bool {
	return setting == "response_format" || setting == "images" && u.cfg.Images || setting == "tools" && u.cfg.Tools
}

// message is one chat message as the upstream reads it: content a string, or text and
// image_url parts when the message shows images.
type message struct {
	Role       string          `json:"role"`
	Content    any             `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// inlineImages fetches each image a message names by an http(s) URL through the service's
// fetcher (which refuses private addresses and reads the account's uploads) and sends it as a
// data: URL, so the upstream fetches nothing on a caller's behalf. An image that cannot be
// fetched, or is not an image, is the model's refusal of the request as written.
func inlineImages(ctx context.Context, env runners.Env, msgs []catalog.Message) error {
	for i, m := range msgs {
		for k, u := range m.Images {
			if strings.HasPrefix(u, "data:") {
				continue
			}
			refuse := func(msg string) error {
				return &runners.Refusal{Code: "invalid_input", Detail: []runners.Violation{{Loc: []string{"body", "messages", fmt.Sprint(i), "content"},
					Msg: fmt.Sprintf("The image %d of messages[%d] %s.", k, i, msg), Type: "invalid_input"}}}
			}
			if env.Inputs == nil {
				return &runners.Failure{Code: "run_failed", Message: "No fetcher is configured for images."}
			}
			data, ct, err := env.Inputs.Fetch(ctx, u)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return refuse("could not be fetched")
			}
			if !strings.HasPrefix(ct, "image/") {
				return refuse("is not an image")
			}
			m.Images[k] = "data:" + ct + ";base64," + base64.StdEncoding.EncodeToString(data)
		}
	}
	return nil
}

func messages(msgs []catalog.Message) []message {
	out := make([]message, len(msgs))
	for i, m := range msgs {
		out[i] = message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if m.Content == "" && len(m.ToolCalls) > 0 {
			out[i].Content = nil // an assistant message that only called tools
		}
		if len(m.Images) == 0 {
			continue
		}
		parts := []any{}
		if m.Content != "" {
			parts = append(parts, map[string]any{"type": "text", "text": m.Content})
		}
		for _, u := range m.Images {
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}})
		}
		out[i].Content = parts
	}
	return out
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// upstreamError is the error object an upstream may send with a 200: as the whole answer,
// or as an event of a stream that broke after it began.
type upstreamError struct {
	Message string `json:"message"`
}

// chunk is one event of a streamed answer.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content   string          `json:"content"`
			Refusal   string          `json:"refusal"`
			ToolCalls []toolCallPiece `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage         `json:"usage"`
	Error *upstreamError `json:"error"`
}

// completion is a whole (not streamed) answer.
type completion struct {
	Choices []struct {
		Message *struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []any   `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage         `json:"usage"`
	Error *upstreamError `json:"error"`
}

// answer is what the upstream wrote, from either kind of answer.
type answer struct {
	content, refusal strings.Builder
	toolCalls        []any
	pieces           []*toolCall // a stream's tool calls, put together by index
	finish           string
	usage            *usage
}

// toolCallPiece is one streamed piece of a tool call: its index, then its id, name and the
// arguments' text in pieces.
type toolCallPiece struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type toolCall struct {
	id, name  string
	arguments strings.Builder
}

// addPiece adds a streamed piece to the call at its index.
func (a *answer) addPiece(p toolCallPiece) error {
	if p.Index < 0 || p.Index > 127 {
		return protocolError("sent a tool call at index %d", p.Index)
	}
	for len(a.pieces) <= p.Index {
		a.pieces = append(a.pieces, &toolCall{})
	}
	c := a.pieces[p.Index]
	c.id += p.ID
	c.name += p.Function.Name
	c.arguments.WriteString(p.Function.Arguments)
	return nil
}

// calls answers the tool calls the upstream made, whole or put together from a stream.
func (a *answer) calls() []any {
	out := a.toolCalls
	for _, c := range a.pieces {
		out = append(out, map[string]any{"id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": c.arguments.String()}})
	}
	return out
}

// chat asks the upstream for one answer: streamed when someone reads the text as it is written
// (env.Text), whole otherwise, since a stream asked for and put back together costs both sides
// more than the answer itself. Either kind of answer is read, whatever was asked (some servers
// stream regardless, some never do); an answer that follows neither protocol fails the run,
// never succeeds empty.
func (u *Runner) chat(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	var in catalog.ChatInput
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return runners.Result{}, runners.Internal("Reading the chat input", err)
	}
	if err := inlineImages(ctx, env, in.Messages); err != nil {
		return runners.Result{}, err
	}
	req := chatRequest{Model: u.cfg.Model, Messages: messages(in.Messages), MaxTokens: in.MaxTokens, Temperature: in.Temperature, TopP: in.TopP,
		Stop: in.Stop, Seed: in.Seed, FrequencyPenalty: in.FrequencyPenalty, PresencePenalty: in.PresencePenalty, ResponseFormat: in.ResponseFormat,
		Tools: in.Tools, ToolChoice: in.ToolChoice}
	if env.Text != nil {
		req.Stream, req.StreamOptions = true, &streamOptions{IncludeUsage: true}
	}
	body, _ := json.Marshal(req)
	resp, err := u.post(ctx, "/chat/completions", body)
	if err != nil {
		return runners.Result{}, err
	}
	defer release(resp)
	var a answer
	if body, stream := kind(resp); stream {
		err = readStream(body, env.Text, &a)
	} else {
		err = readWhole(body, env.Text, &a)
	}
	if err != nil {
		if ctx.Err() != nil {
			return partial(a.content.String(), in, a.usage), ctx.Err()
		}
		return partial(a.content.String(), in, a.usage), err
	}
	if a.refusal.Len() > 0 || a.finish == "content_filter" {
		msg := a.refusal.String()
		if msg == "" {
			msg = "The model's content filter stopped the answer."
		}
		return partial(a.content.String(), in, a.usage), &runners.Refusal{Code: "content_policy",
			Detail: []runners.Violation{{Loc: []string{"body", "messages"}, Msg: msg, Type: "content_policy"}}}
	}
	if a.finish == "" {
		a.finish = "stop"
	}
	res := partial(a.content.String(), in, a.usage)
	res.Document["finish_reason"] = a.finish
	if calls := a.calls(); len(calls) > 0 {
		res.Document["tool_calls"] = calls
	}
	return res, nil
}

// kind tells a stream of server-sent events from a whole JSON answer, by the content type, or
// by the first byte when the upstream names none or another; it answers the body to read.
func kind(resp *http.Response) (io.Reader, bool) {
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		return resp.Body, true
	case strings.HasPrefix(ct, "application/json"):
		return resp.Body, false
	}
	br := bufio.NewReader(resp.Body)
	for {
		b, err := br.Peek(1)
		if err != nil {
			return br, false // an empty answer: readWhole refuses it
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
			continue
		}
		return br, b[0] != '{'
	}
}

// protocolError fails a run whose upstream answered 200 outside the protocol. It is not
// retried: the same upstream answers the same way.
func protocolError(format string, args ...any) error {
	return &runners.Failure{Code: "run_failed", Message: "The model server answered outside the chat completions protocol.",
		Cause: fmt.Errorf("upstream "+format, args...)}
}

// readWhole reads a whole answer (a chat.completion object).
func readWhole(r io.Reader, text func(string), a *answer) error {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return &runners.Failure{Code: "run_failed", Message: "The model server's answer was cut off.", Retryable: true, Cause: err}
	}
	var c completion
	if err := json.Unmarshal(b, &c); err != nil {
		return &runners.Failure{Code: "run_failed", Message: "The model server sent an answer that could not be read.", Cause: err}
	}
	if c.Error != nil {
		return protocolError("answered an error: %s", clip(c.Error.Message))
	}
	if len(c.Choices) == 0 || c.Choices[0].Message == nil {
		return protocolError("answered no message")
	}
	ch := c.Choices[0]
	if ch.Message.Content != nil {
		a.content.WriteString(*ch.Message.Content)
		if text != nil && *ch.Message.Content != "" {
			text(*ch.Message.Content)
		}
	}
	if ch.Message.Refusal != nil {
		a.refusal.WriteString(*ch.Message.Refusal)
	}
	a.toolCalls = ch.Message.ToolCalls
	if ch.FinishReason != nil {
		a.finish = *ch.FinishReason
	}
	a.usage = c.Usage
	return nil
}

// readStream reads a streamed answer (chat.completion.chunk events, then [DONE]), passing the
// text on as it arrives.
func readStream(r io.Reader, text func(string), a *answer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), 4<<20)
	events, done := 0, false
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue // a comment, an event name, a blank line between events
		}
		data = bytes.TrimSpace(data)
		events++
		if string(data) == "[DONE]" {
			done = true
			break
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return protocolError("sent an unreadable chunk: %v", err)
		}
		if c.Error != nil {
			return protocolError("broke off its stream: %s", clip(c.Error.Message))
		}
		if c.Usage != nil {
			a.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				a.content.WriteString(ch.Delta.Content)
				if text != nil {
					text(ch.Delta.Content)
				}
			}
			a.refusal.WriteString(ch.Delta.Refusal)
			for _, p := range ch.Delta.ToolCalls {
				if err := a.addPiece(p); err != nil {
					return err
				}
			}
			if ch.FinishReason != nil {
				a.finish = *ch.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return &runners.Failure{Code: "run_failed", Message: "The model server's stream was cut off.", Retryable: true, Cause: err}
	}
	if events == 0 {
		return protocolError("answered neither a chat completion nor a stream of one")
	}
	if !done && a.finish == "" {
		// Neither the closing [DONE] nor a finish reason: the answer was cut short, or was
		// never a stream of this protocol.
		return &runners.Failure{Code: "run_failed", Message: "The model server's stream ended before the answer did.", Retryable: true}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}

// counted says the upstream sent a usage that can be a count: none below zero.
func (u *usage) counted() bool { return u != nil && u.PromptTokens >= 0 && u.CompletionTokens >= 0 }

// partial is the document of what the upstream wrote so far, with its usage: the upstream's
// own count when it sent one that can be a count, the reference tokenizer's otherwise.
func partial(content string, in catalog.ChatInput, got *usage) runners.Result {
	var inTok, outTok int
	if got.counted() {
		inTok, outTok = got.PromptTokens, got.CompletionTokens
	} else {
		inTok, outTok = in.PromptTokens, tokens.Count(content)
	}
	return runners.Result{
		Document: map[string]any{"content": content, "finish_reason": "cancelled",
			"usage": map[string]any{"input_tokens": inTok, "output_tokens": outTok}},
		Metrics: map[string]float64{"input_tokens": float64(inTok), "output_tokens": float64(outTok), "output_budget": float64(in.MaxTokens)},
	}
}

func (u *Runner) embed(ctx context.Context, job runners.Job) (runners.Result, error) {
	var in catalog.EmbeddingsInput
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return runners.Result{}, runners.Internal("Reading the embeddings input", err)
	}
	body, _ := json.Marshal(map[string]any{"model": u.cfg.Model, "input": in.Input, "encoding_format": "float"})
	resp, err := u.post(ctx, "/embeddings", body)
	if err != nil {
		return runners.Result{}, err
	}
	defer release(resp)
	var out struct {
		Data  []vector `json:"data"`
		Usage *usage   `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&out); err != nil {
		return runners.Result{}, &runners.Failure{Code: "run_failed", Message: "The model server sent an answer that could not be read.", Cause: err}
	}
	vecs, err := vectors(out.Data, len(in.Input))
	if err != nil {
		return runners.Result{}, err
	}
	n := in.InputTokens
	if out.Usage.counted() {
		n = out.Usage.PromptTokens
	}
	return runners.Result{
		Document: map[string]any{"embeddings": vecs, "usage": map[string]any{"input_tokens": n, "output_tokens": 0}},
		Metrics:  map[string]float64{"input_tokens": float64(n), "output_tokens": 0},
	}, nil
}

// vector is one item of an embeddings answer.
type vector struct {
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// vectors puts an embeddings answer back in the inputs' order. Every input's index must be
// answered exactly once with a vector: an answer that leaves one out, repeats one or sends an
// empty one follows no protocol and fails the run (refunded), never succeeds with a hole.
func vectors(data []vector, inputs int) ([]any, error) {
	failed := func(format string, args ...any) error {
		return &runners.Failure{Code: "run_failed", Message: "The model server answered other vectors than the inputs asked for.",
			Cause: fmt.Errorf("upstream "+format, args...)}
	}
	if len(data) != inputs {
		return nil, failed("answered %d vectors for %d inputs", len(data), inputs)
	}
	vecs := make([]any, inputs)
	for _, d := range data {
		switch {
		case d.Index < 0 || d.Index >= inputs:
			return nil, failed("answered a vector at index %d of %d inputs", d.Index, inputs)
		case vecs[d.Index] != nil:
			return nil, failed("answered index %d twice", d.Index)
		case len(d.Embedding) == 0:
			return nil, failed("answered an empty vector at index %d", d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

// release reads what is left of an answer before closing it, so that its connection goes back
// to the pool: a JSON decoder stops at the object's end, a stream's reader at [DONE], and an
// answer closed before its end costs the next call a new connection.
func release(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// post sends one request and turns an upstream refusal into the runner protocol: a 400 or
// 422 is the model refusing the request as written (content_policy when the upstream says
// so, invalid_input otherwise, its parser's refusal), 429 and 5xx are busy and may be
// retried, anything else fails the run.
func (u *Runner) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, runners.Internal("Calling the model server", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if u.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+u.cfg.APIKey)
	}
	resp, err := u.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &runners.Failure{Code: "run_failed", Message: "The model server could not be reached.", Retryable: true, Cause: err}
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	msg := e.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	msg = clip(msg)
	switch {
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity:
		code := "invalid_input"
		if s := fmt.Sprint(e.Error.Code) + " " + e.Error.Type; strings.Contains(s, "content") {
			code = "content_policy"
		}
		return nil, &runners.Refusal{Code: code, Detail: []runners.Violation{{Loc: []string{"body"}, Msg: "The model refused the request: " + msg, Type: code}}}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, &busy{Failure: &runners.Failure{Code: "run_failed", Message: fmt.Sprintf("The model server is busy or failing (status %d).", resp.StatusCode),
			Retryable: true, Cause: fmt.Errorf("upstream %d: %s", resp.StatusCode, msg)}, after: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return nil, &runners.Failure{Code: "run_failed", Message: fmt.Sprintf("The model server answered status %d.", resp.StatusCode),
		Cause: fmt.Errorf("upstream %d: %s", resp.StatusCode, msg)}
}
