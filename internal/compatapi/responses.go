package compatapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
)

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Temperature     *float64        `json:"temperature"`
	TopP            *float64        `json:"top_p"`
	Stream          bool            `json:"stream"`
	Reasoning       *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	User json.RawMessage `json:"user"`
	// Function tools, in the Responses protocol's flat form (responsesTools).
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	// Settings of the protocol that no model here honours: refused with their param.
	Text               json.RawMessage `json:"text"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Background         json.RawMessage `json:"background"`
	TopLogprobs        json.RawMessage `json:"top_logprobs"`
}

// input checks the request and builds the chat input it asks for.
func (req responsesRequest) input() (catalog.ChatInput, error) {
	if err := refuseUnoffered([]setting{
		{"previous_response_id", req.PreviousResponseID, []string{"null"}},
		{"conversation", req.Conversation, []string{"null"}},
		{"background", req.Background, []string{"null", "false"}},
		{"top_logprobs", req.TopLogprobs, []string{"null", "0"}},
	}); err != nil {
		return catalog.ChatInput{}, err
	}
	format, err := textFormat(req.Text)
	if err != nil {
		return catalog.ChatInput{}, err
	}
	tools, choice, err := responsesTools(req.Tools, req.ToolChoice)
	if err != nil {
		return catalog.ChatInput{}, err
	}
	cr := chatRequest{Model: req.Model, MaxTokens: req.MaxOutputTokens, Temperature: req.Temperature, TopP: req.TopP, User: req.User,
		ResponseFormat: format, Tools: tools, ToolChoice: choice}
	if req.Reasoning != nil {
		cr.ReasoningEffort = req.Reasoning.Effort
	}
	in, err := cr.input()
	if err != nil {
		return in, err
	}
	msgs, err := responsesInput(req.Input)
	if err != nil {
		return in, err
	}
	if req.Instructions != "" {
		msgs = append([]catalog.Message{{Role: "system", Content: req.Instructions}}, msgs...)
	}
	whole := bytes.HasPrefix(bytes.TrimSpace(req.Input), []byte(`"`)) // input is one string, not items
	for i, m := range msgs {
		if err := checkMessage(i, m.Content); err != nil {
			if e, ok := apierr.As(err); ok && whole && i == len(msgs)-1 {
				e.With("param", "input") // the string itself: there is no item to name
			}
			return in, err
		}
	}
	in.Messages = msgs
	return in, nil
}

// responses answers the Responses protocol over a chat call, whole or streamed as its events.
// A refusal names the fields as this protocol spells them (asResponses).
func (h *Handler) responses() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		shift := 0 // 1 when instructions were sent: they are message 0 of the chat input
		err := h.respond(w, r, p, &shift)
		return asResponses(err, shift)
	}
}

// responsesNames spells the Chat Completions fields that the checks shared with that protocol
// name as the Responses protocol does.
var responsesNames = strings.NewReplacer("max_completion_tokens", "max_output_tokens", "max_tokens", "max_output_tokens",
	"reasoning_effort", "reasoning.effort")

// asResponses renames, in a refusal's message and param, the fields the caller of the Responses
// protocol did not send: max_tokens for max_output_tokens, reasoning_effort for
// reasoning.effort, messages for input, and messages[i] for the input item it came from
// (instructions, when sent, are message 0: shift is 1).
func asResponses(err error, shift int) error {
	items := func(s string) string {
		return messageIndex.ReplaceAllStringFunc(s, func(m string) string {
			i, _ := strconv.Atoi(m[len("messages[") : len(m)-1])
			if i -= shift; i < 0 {
				return "instructions"
			}
			return fmt.Sprintf("input[%d]", i)
		})
	}
	message := func(s string) string { return items(responsesNames.Replace(s)) }
	return respell(err, message, func(param string) string {
		if param == "messages" {
			param = "input"
		}
		// instructions are message 0: a refusal of its content names instructions itself.
		return strings.Replace(message(param), "instructions.content", "instructions", 1)
	})
}

// respell is a refusal with its message and its param (the code's own, paramOf, when it
// names none) spelled as the caller's protocol or request names the fields. A model parser's
// refusal stays one (chat.ParserRefusal), so that translate answers it 422 as on the other
// routes.
func respell(err error, message, param func(string) string) error {
	e, ok := apierr.As(err)
	if !ok {
		return err
	}
	c := *e
	c.Message = message(e.Text())
	c.Fields = maps.Clone(e.Fields)
	p, ok := c.Fields["param"].(string)
	if !ok {
		p = paramOf(e.Code)
	}
	if p != "" {
		c.With("param", param(p))
	}
	var parser *chat.ParserRefusal
	if errors.As(err, &parser) {
		return &chat.ParserRefusal{Err: &c}
	}
	return &c
}

// messageIndex finds a chat message's place in a refusal ("messages[2]").
var messageIndex = regexp.MustCompile(`messages\[[0-9]+\]`)

func (h *Handler) respond(w http.ResponseWriter, r *http.Request, p *auth.Principal, shift *int) error {
	var req responsesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Instructions != "" {
		*shift = 1
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	call, err := h.start(w, r, catalog.KindChat, chat.CallRequest{Principal: p, Model: req.Model, Input: in, Stream: req.Stream}, "messages") // input, as asResponses spells it
	if call == nil {
		return err
	}
	defer call.Close()
	if req.Stream {
		h.streamResponse(w, r, call, req)
		return nil
	}
	out, err := call.Result(r.Context())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, r, http.StatusOK, responseObject(req, call.Job, &out))
	return nil
}

// responseObject is the protocol's response object of a call, with its job's model (a replay
// answers the first call's, whatever model the replay names): in progress while out is nil,
// else settled (completed, or incomplete when the output budget ran out). Its output is the
// message, left out when the model only called tools (hasMessage), then a function_call item
// per call; streamed or not, the same.
func responseObject(req responsesRequest, j jobs.Job, out *chat.Outcome) map[string]any {
	o := map[string]any{
		"id": "resp_" + j.ID, "object": "response", "created_at": created(j), "status": "in_progress",
		"incomplete_details": nil, "model": j.Model, "error": nil, "instructions": nilIfEmpty(req.Instructions),
		"max_output_tokens": req.MaxOutputTokens, "temperature": req.Temperature, "top_p": req.TopP,
		"parallel_tool_calls": false, "tool_choice": "auto", "tools": echoTools(req.Tools), "output": []any{}, "usage": nil,
	}
	if out == nil {
		return o
	}
	o["status"] = "completed"
	if out.FinishReason == "length" {
		o["status"], o["incomplete_details"] = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	output := []any{}
	if hasMessage(*out) {
		output = append(output, messageItem(j, o["status"].(string), out.Content))
	}
	for k, c := range out.ToolCalls {
		output = append(output, functionCallItem(j, k, c, "completed"))
	}
	o["output"] = output
	o["usage"] = map[string]any{"input_tokens": out.Usage.InputTokens, "output_tokens": out.Usage.OutputTokens,
		"total_tokens":         out.Usage.InputTokens + out.Usage.OutputTokens,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	return o
}

// hasMessage reports whether a settled answer's output holds the message item: when the model
// wrote text, or called no tool (an empty answer is an empty message, never no output).
func hasMessage(out chat.Outcome) bool {
	return out.Content != "" || len(out.ToolCalls) == 0
}

// messageItem is the assistant's output message; text is its one output_text part.
func messageItem(j jobs.Job, status, text string) map[string]any {
	content := []any{}
	if status != "in_progress" {
		content = []any{textPart(text)}
	}
	return map[string]any{"type": "message", "id": "msg_" + j.ID, "status": status, "role": "assistant", "content": content}
}

func textPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
}

// textFormat reads the Responses protocol's text.format as chat completions' response_format:
// json_schema's name, schema, strict and description move under json_schema.
func textFormat(raw json.RawMessage) (json.RawMessage, error) {
	if c := compact(raw); c == "" || c == "null" || c == "{}" {
		return nil, nil
	}
	var t struct {
		Format    map[string]json.RawMessage `json:"format"`
		Verbosity json.RawMessage            `json:"verbosity"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return nil, apierr.Newf(apierr.InvalidBody, "text must be an object with a format.").With("param", "text")
	}
	if v := compact(t.Verbosity); v != "" && v != "null" && v != `"medium"` {
		return nil, apierr.Newf(apierr.InvalidBody, "text.verbosity is not supported by the models of this service.").With("param", "text.verbosity")
	}
	typ := compact(t.Format["type"])
	if typ != `"json_schema"` {
		b, _ := json.Marshal(t.Format)
		return b, nil
	}
	inner := map[string]json.RawMessage{}
	for k, v := range t.Format {
		if k != "type" {
			inner[k] = v
		}
	}
	return json.Marshal(map[string]any{"type": "json_schema", "json_schema": inner})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// responsesInput reads `input`: a string, or a list of messages.
func responsesInput(raw json.RawMessage) ([]catalog.Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, apierr.Newf(apierr.InputRequired, "input is required.")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []catalog.Message{{Role: "user", Content: s}}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		var own shapeRefusal
		if errors.As(err, &own) {
			return nil, apierr.Newf(apierr.InputInvalid, "input: %s", own.msg)
		}
		return nil, apierr.Newf(apierr.InputInvalid, "input must be a string or a list of messages, each with a role and content.")
	}
	var out []catalog.Message
	for i, it := range items {
		if it.Type == "function_call" || it.Type == "function_call_output" {
			var err error
			if out, err = toolItem(out, i, it); err != nil {
				return nil, err
			}
			continue
		}
		if it.Type != "" && it.Type != "message" {
			return nil, apierr.Newf(apierr.InputInvalid, "input[%d] type %q is not offered; send messages and function call items.", i, apierr.Excerpt(it.Type))
		}
		role := it.Role
		if role == "developer" {
			role = "system"
		}
		if len(it.Content.images) > 0 && role != "user" {
			return nil, apierr.Newf(apierr.InputInvalid, "input[%d]: only a user message may hold images.", i)
		}
		out = append(out, catalog.Message{Role: role, Content: it.Content.text, Images: it.Content.images})
	}
	if len(out) == 0 {
		return nil, apierr.Newf(apierr.InputRequired, "input holds no message.")
	}
	return out, nil
}
