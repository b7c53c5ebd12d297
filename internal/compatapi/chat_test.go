package compatapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/compatapi"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// TestCHAT01_CompatOutputBudgetNamedAsSent proves CHAT-01 on /compat/v1/chat/completions: an
// output budget over what the model can write is 400 output_limit_reached naming the field the
// request sent, max_completion_tokens in its param and message when that was it (max_tokens
// otherwise), nothing charged; Responses names max_output_tokens as before.
func TestCHAT01_CompatOutputBudgetNamedAsSent(t *testing.T) {
	e := newCompatEnv(t, httpapi.DefaultLimits())
	before := e.balance()
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ path, body, param, other string }{
		{"/chat/completions", `{"model":"qwen",` + msgs + `,"max_completion_tokens":100000}`, "max_completion_tokens", "max_tokens"},
		{"/chat/completions", `{"model":"qwen",` + msgs + `,"max_completion_tokens":100000,"max_tokens":5}`, "max_completion_tokens", "max_tokens"},
		{"/chat/completions", `{"model":"qwen",` + msgs + `,"max_tokens":100000}`, "max_tokens", "max_completion_tokens"},
		{"/chat/completions", `{"model":"qwen",` + msgs + `,"max_completion_tokens":0}`, "max_completion_tokens", "max_tokens"},
		{"/responses", `{"model":"qwen","input":"hi","max_output_tokens":100000}`, "max_output_tokens", "max_tokens"},
	} {
		a := e.do("POST", compatapi.Prefix+c.path, c.body, "Authorization", "Bearer "+e.key)
		if a.status != http.StatusBadRequest || a.err.Param != c.param || !strings.Contains(a.err.Message, c.param) ||
			strings.Contains(a.err.Message, c.other) {
			t.Fatalf("%s %s: %d %s, want 400 naming %s only", c.path, c.body, a.status, a.raw, c.param)
		}
		if strings.Contains(c.body, "100000") && a.err.Code != "output_limit_reached" {
			t.Fatalf("%s %s: code %q, want output_limit_reached", c.path, c.body, a.err.Code)
		}
	}
	if e.balance() != before {
		t.Fatalf("refusals charged: balance %d, was %d", e.balance(), before)
	}
}

// TestCHAT01_CompatStopAtMostFour proves CHAT-01 on /compat/v1/chat/completions and
// /completions: stop holds up to 4 sequences, as the protocol says; more, or a stop that is
// neither a string nor a list of strings, is 400 invalid_body with param stop, nothing
// charged, while 4 are taken.
func TestCHAT01_CompatStopAtMostFour(t *testing.T) {
	e := newCompatEnv(t, httpapi.DefaultLimits())
	bodies := map[string]string{
		"/chat/completions": `{"model":"qwen","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stop":%s}`,
		"/completions":      `{"model":"qwen","prompt":"hi","max_tokens":5,"stop":%s}`,
	}
	for path, body := range bodies {
		before := e.balance()
		for _, stop := range []string{`["a","b","c","d","e"]`, `["a","b","c","d","e","f","g","h"]`, `7`, `[1]`, `{"a":"b"}`} {
			a := e.do("POST", compatapi.Prefix+path, fmt.Sprintf(body, stop), "Authorization", "Bearer "+e.key)
			refused(t, path+" stop "+stop, a, http.StatusBadRequest, "invalid_body")
			if a.err.Param != "stop" || a.err.Type != "invalid_request_error" {
				t.Fatalf("%s stop %s: %s, want param stop", path, stop, a.raw)
			}
		}
		if e.balance() != before {
			t.Fatalf("%s: refusals charged: balance %d, was %d", path, e.balance(), before)
		}
		if a := e.do("POST", compatapi.Prefix+path, fmt.Sprintf(body, `["a","b","c","d"]`), "Authorization", "Bearer "+e.key); a.status != http.StatusOK {
			t.Fatalf("%s: 4 stop sequences: %d %s", path, a.status, a.raw)
		}
	}
}

// TestCHAT01_CompatAudioOutputRefused: a chat completion asking for audio output (modalities
// holding "audio", or audio settings) is refused 400 invalid_body naming the setting, before
// any charge: the models here write text alone, and the call was answered with text as if
// audio had not been asked for. modalities ["text"] is the default and is served.
func TestCHAT01_CompatAudioOutputRefused(t *testing.T) {
	e := newCompatEnv(t, httpapi.DefaultLimits())
	body := `{"model":"qwen","messages":[{"role":"user","content":"hi"}],"max_tokens":5%s}`
	before := e.balance()
	for _, c := range []struct{ extra, param string }{
		{`,"modalities":["text","audio"]`, "modalities"},
		{`,"modalities":["audio"]`, "modalities"},
		{`,"audio":{"voice":"alloy","format":"wav"}`, "audio"},
	} {
		a := e.do("POST", compatapi.Prefix+"/chat/completions", fmt.Sprintf(body, c.extra), "Authorization", "Bearer "+e.key)
		refused(t, c.extra, a, http.StatusBadRequest, "invalid_body")
		if a.err.Param != c.param {
			t.Fatalf("%s: %s, want param %s", c.extra, a.raw, c.param)
		}
	}
	if e.balance() != before {
		t.Fatalf("refusals charged: balance %d, was %d", e.balance(), before)
	}
	if a := e.do("POST", compatapi.Prefix+"/chat/completions", fmt.Sprintf(body, `,"modalities":["text"],"audio":null`), "Authorization", "Bearer "+e.key); a.status != http.StatusOK {
		t.Fatalf("modalities [text]: %d %s", a.status, a.raw)
	}
}
