package compatapi

import (
	"encoding/json"
	"fmt"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
)

// inputItem is one item of a Responses `input` list: a message, a function call the model
// made earlier, or the output the caller's function gave.
type inputItem struct {
	Type      string  `json:"type"`
	Role      string  `json:"role"`
	Content   content `json:"content"`
	CallID    string  `json:"call_id"`
	Name      string  `json:"name"`
	Arguments string  `json:"arguments"`
	Output    *string `json:"output"`
}

// responsesTools turns the Responses protocol's flat function tools ({"type": "function",
// "name", "parameters", …}) and tool_choice into chat completions' form, which toolsOf then
// checks; nil when none were sent.
func responsesTools(rawTools, rawChoice json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	if t := compact(rawTools); t == "" || t == "null" || t == "[]" {
		return nil, rawChoice, nil
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(rawTools, &tools) != nil {
		return nil, nil, apierr.Newf(apierr.InvalidBody, "tools must be a list of function tools.").With("param", "tools")
	}
	out := make([]map[string]any, len(tools))
	for i, t := range tools {
		if compact(t["type"]) != `"function"` {
			return nil, nil, apierr.Newf(apierr.InvalidBody, "tools[%d] must be a function tool; no other kind is offered.", i).With("param", fmt.Sprintf("tools[%d]", i))
		}
		fn := map[string]json.RawMessage{}
		for k, v := range t {
			if k != "type" {
				fn[k] = v
			}
		}
		out[i] = map[string]any{"type": "function", "function": fn}
	}
	chatTools, _ := json.Marshal(out)
	var choice struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(rawChoice, &choice) == nil && choice.Type == "function" {
		c, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": choice.Name}})
		return chatTools, c, nil
	}
	return chatTools, rawChoice, nil
}

// toolItem adds a function call item or a function call output item (a tool message) to msgs.
// A function call joins the assistant message directly before it, whether that holds the
// answer's text or its earlier calls: one answer of the model is one assistant message
// upstream (text and tool_calls together), as chat completions sends it, since upstreams whose
// templates need alternating roles refuse two assistant messages in a row.
func toolItem(msgs []catalog.Message, i int, it inputItem) ([]catalog.Message, error) {
	if it.CallID == "" {
		return nil, apierr.Newf(apierr.InputInvalid, "input[%d] needs the call_id of its function call.", i)
	}
	if it.Type == "function_call_output" {
		if it.Output == nil {
			return nil, apierr.Newf(apierr.InputInvalid, "input[%d] needs the output of the function, as a string.", i)
		}
		return append(msgs, catalog.Message{Role: "tool", ToolCallID: it.CallID, Content: *it.Output}), nil
	}
	if it.Name == "" {
		return nil, apierr.Newf(apierr.InputInvalid, "input[%d] needs the name of the function it called.", i)
	}
	call := map[string]any{"id": it.CallID, "type": "function", "function": map[string]any{"name": it.Name, "arguments": it.Arguments}}
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
		var calls []any
		_ = json.Unmarshal(msgs[n-1].ToolCalls, &calls)
		msgs[n-1].ToolCalls, _ = json.Marshal(append(calls, call))
		return msgs, nil
	}
	calls, _ := json.Marshal([]any{call})
	return append(msgs, catalog.Message{Role: "assistant", ToolCalls: calls}), nil
}

// functionCallItem is the k-th tool call the model made, as a Responses output item.
func functionCallItem(j jobs.Job, k int, call any, status string) map[string]any {
	c, _ := call.(map[string]any)
	fn, _ := c["function"].(map[string]any)
	return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", j.ID, k), "call_id": c["id"],
		"name": fn["name"], "arguments": fn["arguments"], "status": status}
}

// echoTools is the response object's `tools`: what the request sent, or none.
func echoTools(raw json.RawMessage) any {
	if t := compact(raw); t != "" && t != "null" {
		return raw
	}
	return []any{}
}
