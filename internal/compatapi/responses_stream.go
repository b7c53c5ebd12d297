package compatapi

import (
	"net/http"
	"strings"

	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
)

// responseEvents writes the Responses protocol's stream: named events, each carrying its type
// and a sequence number counted from 0.
type responseEvents struct {
	ev  *httpapi.Events
	seq int
}

func (e *responseEvents) send(typ string, fields map[string]any) {
	fields["type"], fields["sequence_number"] = typ, e.seq
	e.seq++
	e.ev.SendNamed(typ, fields)
}

// functionCall sends a tool call the model made as its own output item, at output index at:
// added, its arguments (whole, in one delta), done.
func (e *responseEvents) functionCall(j jobs.Job, k, index int, call any) {
	item := functionCallItem(j, k, call, "completed")
	at := map[string]any{"item_id": item["id"], "output_index": index}
	opened := functionCallItem(j, k, call, "in_progress")
	opened["arguments"] = ""
	e.send("response.output_item.added", map[string]any{"output_index": index, "item": opened})
	e.send("response.function_call_arguments.delta", withFields(at, "delta", item["arguments"]))
	e.send("response.function_call_arguments.done", withFields(at, "arguments", item["arguments"]))
	e.send("response.output_item.done", map[string]any{"output_index": index, "item": item})
}

func withFields(base map[string]any, k string, v any) map[string]any {
	m := map[string]any{k: v}
	for bk, bv := range base {
		m[bk] = bv
	}
	return m
}

// textAt names the message item's one text part in an event's fields.
func textAt(j jobs.Job, fields map[string]any) map[string]any {
	fields["item_id"], fields["output_index"], fields["content_index"] = "msg_"+j.ID, 0, 0
	return fields
}

// openMessage opens the message item and its text part (response.output_item.added,
// response.content_part.added).
func (e *responseEvents) openMessage(j jobs.Job) {
	e.send("response.output_item.added", map[string]any{"output_index": 0, "item": messageItem(j, "in_progress", "")})
	e.send("response.content_part.added", textAt(j, map[string]any{"part": textPart("")}))
}

// streamResponse answers a Responses call with stream: true as the protocol's events:
// response.created and response.in_progress; at the model's first text the message item and
// its text part opened (response.output_item.added, response.content_part.added), then
// response.output_text.delta as the model writes; the text, part and item closed
// (response.output_text.done, response.content_part.done, response.output_item.done); a
// function_call item per tool call; and response.completed (or response.incomplete when the
// output budget ran out) with the whole response and its usage. The items are those of the
// answer not streamed (hasMessage): an answer that only calls tools has no message item, and
// one with neither text nor calls has its empty message, opened at the end.
// A refusal or failure after the 200 is an `error` event that ends the stream; the call is
// charged and refunded exactly as when it is not streamed.
func (h *Handler) streamResponse(w http.ResponseWriter, r *http.Request, call *chat.Call, req responsesRequest) {
	e := &responseEvents{ev: httpapi.EventStream(w)}
	j := call.Job
	e.send("response.created", map[string]any{"response": responseObject(req, j, nil)})
	e.send("response.in_progress", map[string]any{"response": responseObject(req, j, nil)})
	var text strings.Builder
	opened := false
	out, err := relay(r, call, func(p string) {
		if p == "" {
			return // no text yet: the message item opens with the first
		}
		if !opened {
			e.openMessage(j)
			opened = true
		}
		text.WriteString(p)
		e.send("response.output_text.delta", textAt(j, map[string]any{"delta": p, "logprobs": []any{}}))
	})
	if err != nil {
		if r.Context().Err() == nil {
			c := streamedError(err)["error"].(map[string]any)
			e.send("error", map[string]any{"code": c["code"], "message": c["message"], "param": c["param"]})
		}
		return
	}
	out.Content = text.String() // the text as streamed, which the deltas add up to
	final := responseObject(req, call.Job, &out)
	status := final["status"].(string)
	first := 0 // the output index of the first function call
	if hasMessage(out) {
		if !opened {
			e.openMessage(j)
		}
		e.send("response.output_text.done", textAt(j, map[string]any{"text": out.Content, "logprobs": []any{}}))
		e.send("response.content_part.done", textAt(j, map[string]any{"part": textPart(out.Content)}))
		e.send("response.output_item.done", map[string]any{"output_index": 0, "item": messageItem(call.Job, status, out.Content)})
		first = 1
	}
	for k, c := range out.ToolCalls {
		e.functionCall(call.Job, k, first+k, c)
	}
	done := "response.completed"
	if status == "incomplete" {
		done = "response.incomplete"
	}
	e.send(done, map[string]any{"response": final})
}
