package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// EventStream commits a 200 text/event-stream answer (headers set on w before the call go out
// with it) and returns its writer. Both chat surfaces stream this way; the queue host's status
// stream keeps its own loop because it compares documents before sending them.
func EventStream(w http.ResponseWriter) *Events {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return &Events{w: w, fl: fl}
}

// Events writes server-sent events, each flushed as it is written.
type Events struct {
	w  http.ResponseWriter
	fl http.Flusher
}

// Send writes v as one `data:` event of JSON (HTML left unescaped, as OpenAI's streams are);
// a nil v writes nothing.
func (e *Events) Send(v any) { e.SendNamed("", v) }

// SendNamed writes v as one event of JSON named by an `event:` line (none when name is empty).
func (e *Events) SendNamed(name string, v any) {
	if v == nil {
		return
	}
	var buf bytes.Buffer
	if name != "" {
		buf.WriteString("event: " + name + "\n")
	}
	buf.WriteString("data: ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	buf.WriteString("\n")
	e.write(buf.Bytes())
}

// Done writes the closing `data: [DONE]` event.
func (e *Events) Done() { e.write([]byte("data: [DONE]\n\n")) }

func (e *Events) write(b []byte) {
	_, _ = e.w.Write(b)
	if e.fl != nil {
		e.fl.Flush()
	}
}
