package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	if u.cfg.Kind == catalog.KindEmbeddings {
		return u.embed(ctx, job)
	}
	return u.chat(ctx, job, env)
}

type chatRequest struct {
	Model         string            `json:"model"`
	Messages      []catalog.Message `json:"messages"`
	MaxTokens     int               `json:"max_tokens"`
	Temperature   *float64          `json:"temperature,omitempty"`
	Stop          []string          `json:"stop,omitempty"`
	Stream        bool              `json:"stream"`
	StreamOptions map[string]bool   `json:"stream_options"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type chunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func (u *Runner) chat(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	var in catalog.ChatInput
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return runners.Result{}, &runners.Failure{Code: "run_failed", Message: "chat input: " + err.Error()}
	}
	body, _ := json.Marshal(chatRequest{Model: u.cfg.Model, Messages: in.Messages, MaxTokens: in.MaxTokens, Temperature: in.Temperature,
		Stop: in.Stop, Stream: true, StreamOptions: map[string]bool{"include_usage": true}})
	resp, err := u.post(ctx, "/chat/completions", body)
	if err != nil {
		return runners.Result{}, err
	}
	defer resp.Body.Close()
	var content, refusal strings.Builder
	finish := ""
	var got *usage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return partial(content.String(), in, got), &runners.Failure{Code: "run_failed", Message: "upstream sent an unreadable chunk: " + err.Error()}
		}
		if c.Usage != nil {
			got = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				content.WriteString(ch.Delta.Content)
				if env.Text != nil {
					env.Text(ch.Delta.Content)
				}
			}
			refusal.WriteString(ch.Delta.Refusal)
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return partial(content.String(), in, got), ctx.Err()
		}
		return partial(content.String(), in, got), &runners.Failure{Code: "run_failed", Message: "upstream stream broke: " + err.Error(), Retryable: true}
	}
	if refusal.Len() > 0 || finish == "content_filter" {
		msg := refusal.String()
		if msg == "" {
			msg = "The model's content filter stopped the answer."
		}
		return partial(content.String(), in, got), &runners.Refusal{Code: "content_policy",
			Detail: []runners.Violation{{Loc: []string{"body", "messages"}, Msg: msg, Type: "content_policy"}}}
	}
	if finish == "" {
		finish = "stop"
	}
	res := partial(content.String(), in, got)
	res.Document["finish_reason"] = finish
	return res, nil
}

// partial is the document of what the upstream wrote so far, with its usage: the upstream's
// own count when it sent one, the reference tokenizer's otherwise.
func partial(content string, in catalog.ChatInput, got *usage) runners.Result {
	inTok, outTok := in.PromptTokens, tokens.Count(content)
	if got != nil {
		inTok, outTok = got.PromptTokens, got.CompletionTokens
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
		return runners.Result{}, &runners.Failure{Code: "run_failed", Message: "embeddings input: " + err.Error()}
	}
	body, _ := json.Marshal(map[string]any{"model": u.cfg.Model, "input": in.Input, "encoding_format": "float"})
	resp, err := u.post(ctx, "/embeddings", body)
	if err != nil {
		return runners.Result{}, err
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage *usage `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&out); err != nil {
		return runners.Result{}, &runners.Failure{Code: "run_failed", Message: "upstream sent an unreadable answer: " + err.Error()}
	}
	if len(out.Data) != len(in.Input) {
		return runners.Result{}, &runners.Failure{Code: "run_failed", Message: fmt.Sprintf("upstream answered %d vectors for %d inputs", len(out.Data), len(in.Input))}
	}
	vecs := make([]any, len(out.Data))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(vecs) {
			return runners.Result{}, &runners.Failure{Code: "run_failed", Message: "upstream answered a vector out of range"}
		}
		vecs[d.Index] = d.Embedding
	}
	n := in.InputTokens
	if out.Usage != nil {
		n = out.Usage.PromptTokens
	}
	return runners.Result{
		Document: map[string]any{"embeddings": vecs, "usage": map[string]any{"input_tokens": n, "output_tokens": 0}},
		Metrics:  map[string]float64{"input_tokens": float64(n), "output_tokens": 0},
	}, nil
}

// post sends one request and turns an upstream refusal into the runner protocol: a 400 or
// 422 is the model refusing the request as written (content_policy when the upstream says
// so, invalid_input otherwise, its parser's refusal), 429 and 5xx are busy and may be
// retried, anything else fails the run.
func (u *Runner) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, &runners.Failure{Code: "run_failed", Message: err.Error()}
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
		return nil, &runners.Failure{Code: "run_failed", Message: "upstream unreachable: " + err.Error(), Retryable: true}
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
	if len(msg) > 500 {
		msg = msg[:500]
	}
	switch {
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity:
		code := "invalid_input"
		if s := fmt.Sprint(e.Error.Code) + " " + e.Error.Type; strings.Contains(s, "content") {
			code = "content_policy"
		}
		return nil, &runners.Refusal{Code: code, Detail: []runners.Violation{{Loc: []string{"body"}, Msg: "The model refused the request: " + msg, Type: code}}}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, &runners.Failure{Code: "run_failed", Message: fmt.Sprintf("upstream busy (%d): %s", resp.StatusCode, msg), Retryable: true}
	}
	return nil, &runners.Failure{Code: "run_failed", Message: fmt.Sprintf("upstream answered %d: %s", resp.StatusCode, msg)}
}
