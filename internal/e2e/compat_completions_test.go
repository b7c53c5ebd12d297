package e2e_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestCHAT01_CompletionsRefusesUnofferedSettings proves CHAT-01 on /compat/v1/completions: a
// setting no model here honours (logprobs, logit_bias, echo, best_of, suffix) asking for
// something is 400 with its param, nothing charged, as on /chat/completions, while the values
// that ask for nothing are taken; a prompt list of more than one is refused naming prompt; the
// sampling settings chat completions takes are read and checked, never dropped.
func TestCHAT01_CompletionsRefusesUnofferedSettings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		m := newUpstreamHarness(t, db, newMockUpstream(t))
		url := m.api.URL + "/compat/v1/completions"
		before := m.balance()
		for _, c := range []struct{ field, value, param string }{
			{"logprobs", "2", "logprobs"},
			{"logit_bias", `{"50256":-100}`, "logit_bias"},
			{"echo", "true", "echo"},
			{"best_of", "3", "best_of"},
			{"suffix", `"end"`, "suffix"},
			{"prompt", `["a","b"]`, "prompt"},
			{"prompt", `null`, "prompt"},
			{"top_p", "3", "top_p"}, // read as on /chat/completions, not dropped
			{"user", "5", "user"},
		} {
			body := fmt.Sprintf(`{"model":"qwen","prompt":"hi","max_tokens":5,%q:%s}`, c.field, c.value)
			r := m.call(http.MethodPost, url, body)
			e, _ := r.Body["error"].(map[string]any)
			if r.Code != http.StatusBadRequest || e["param"] != c.param {
				t.Fatalf("%s %s: %d %s, want 400 with param %s", c.field, c.value, r.Code, r.Raw, c.param)
			}
		}
		if m.balance() != before {
			t.Fatalf("refusals charged: balance %d, was %d", m.balance(), before)
		}
		idle := `{"model":"qwen","prompt":"hi","max_tokens":5,"logprobs":null,"logit_bias":{},"echo":false,"best_of":1,"suffix":null}`
		if r := m.call(http.MethodPost, url, idle); r.Code != http.StatusOK {
			t.Fatalf("settings asking for nothing: %d %s", r.Code, r.Raw)
		}
	})
}
