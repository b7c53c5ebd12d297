package compatapi

import (
	"net/http"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// chunker builds the protocol's stream chunks of one call.
type chunker interface {
	first() any                               // opens the stream (nil: nothing)
	delta(text string) any                    // one piece of text
	last(finish string) any                   // closes the choice
	usage(u catalog.Usage, finish string) any // the usage chunk of stream_options.include_usage
	tools(calls []any) any                    // the tool calls the model made (nil: none offered)
}

type chatChunks struct {
	id, model string
	created   int64
}

func (c chatChunks) chunk(choices []any) map[string]any {
	return map[string]any{"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
		"system_fingerprint": nil, "choices": choices}
}

func (c chatChunks) first() any {
	return c.chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil}})
}

func (c chatChunks) delta(t string) any {
	return c.chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"content": t}, "logprobs": nil, "finish_reason": nil}})
}

// tools sends the model's tool calls whole, in one delta, each with its index.
func (c chatChunks) tools(calls []any) any {
	indexed := make([]any, len(calls))
	for i, call := range calls {
		m, _ := call.(map[string]any)
		withIndex := map[string]any{"index": i}
		for k, v := range m {
			withIndex[k] = v
		}
		indexed[i] = withIndex
	}
	return c.chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": indexed}, "logprobs": nil, "finish_reason": nil}})
}

func (c chatChunks) last(f string) any {
	return c.chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": finishReason(f)}})
}

func (c chatChunks) usage(u catalog.Usage, _ string) any {
	m := c.chunk([]any{})
	m["usage"] = usageOf(u)
	return m
}

type textChunks struct {
	id, model string
	created   int64
}

func (c textChunks) chunk(choices []any) map[string]any {
	return map[string]any{"id": c.id, "object": "text_completion", "created": c.created, "model": c.model, "choices": choices}
}

func (c textChunks) first() any { return nil }

func (c textChunks) delta(t string) any {
	return c.chunk([]any{map[string]any{"text": t, "index": 0, "logprobs": nil, "finish_reason": nil}})
}

func (c textChunks) tools([]any) any { return nil }

func (c textChunks) last(f string) any {
	return c.chunk([]any{map[string]any{"text": "", "index": 0, "logprobs": nil, "finish_reason": finishReason(f)}})
}

func (c textChunks) usage(u catalog.Usage, _ string) any {
	m := c.chunk([]any{})
	m["usage"] = usageOf(u)
	return m
}

// stream answers a call as server-sent events: 200 is committed once the call is charged and
// started; from then on a refusal or failure arrives inside the stream as an error event
// (spec 02), and a finished call ends with its finish chunk, its usage when asked, and
// "data: [DONE]".
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, call *chat.Call, withUsage bool, c chunker) error {
	ev := httpapi.EventStream(w)
	send := ev.Send
	send(c.first())
	out, err := relay(r, call, func(p string) { send(c.delta(p)) })
	if err != nil {
		if r.Context().Err() == nil {
			send(streamedError(err))
		}
		return nil // a client that went away: the call settles on its own
	}
	if len(out.ToolCalls) > 0 {
		send(c.tools(out.ToolCalls))
	}
	send(c.last(out.FinishReason))
	if withUsage {
		send(c.usage(out.Usage, out.FinishReason))
	}
	ev.Done()
	return nil
}

// relay passes the call's text to piece as the model writes it and answers the settled
// outcome, or the error that ended the call (or the request's own context error). A replay, or
// a call that settled before this request saw its text, passes the whole answer as one piece.
func relay(r *http.Request, call *chat.Call, piece func(string)) (chat.Outcome, error) {
	streamed := false
	for !call.Job.Settled() {
		pieces, settled, err := call.Next(r.Context())
		if err != nil {
			return chat.Outcome{}, err
		}
		for _, p := range pieces {
			streamed = true
			piece(p)
		}
		if settled {
			break
		}
	}
	out, err := call.Result(r.Context())
	if err != nil {
		return out, err
	}
	if !streamed && out.Content != "" {
		piece(out.Content)
	}
	return out, nil
}
