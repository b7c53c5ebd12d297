package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestERR34_CeilingRefusalSaysWhatTheRequestNeeds: a key with a fixed cap of 5 and nothing
// spent, asking for more than 5 credits, is refused key_credit_ceiling with `ceiling`, `spent`
// and `required`, and a message that says the same: what the request needs against what is left
// of the cap, never that the cap is spent. On the compatibility surface (429
// insufficient_quota, whose envelope has no room for the figures) the message carries them: a
// chat completion without max_tokens is quoted for the model's whole output limit.
func TestERR34_CeilingRefusalSaysWhatTheRequestNeeds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarnessOn(t, db, blobs.NewMemory(), func(c *server.Config) { c.ReferenceModels = true })
		_, key := h.newAccount("acct_capped", auth.Pro, 1_000_000, &auth.CeilingRequest{Amount: 5})

		r := h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/image-4b", `{"positivePrompt":"a cat","width":2048,"height":2048,"steps":50}`)
		need := r.num("required")
		if r.Code != http.StatusForbidden || r.str("error") != "key_credit_ceiling" || r.num("ceiling") != 5 || r.num("spent") != 0 || need <= 5 {
			t.Fatalf("over the cap on /v1: %d %s", r.Code, r.Raw)
		}
		want := fmt.Sprintf("This request needs %d credits, more than the 5 left of this key's monthly credit ceiling of 5 (0 spent this month).", need)
		if r.str("message") != want {
			t.Errorf("/v1 message %q, want %q", r.str("message"), want)
		}

		c := h.callKey(key, http.MethodPost, h.api.URL+"/compat/v1/chat/completions", `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)
		e, _ := c.Body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if c.Code != http.StatusTooManyRequests || e["code"] != "insufficient_quota" {
			t.Fatalf("over the cap on /compat: %d %s", c.Code, c.Raw)
		}
		if !strings.Contains(msg, "credits, more than the 5 left of this key's monthly credit ceiling of 5 (0 spent this month)") || strings.Contains(msg, "is spent") {
			t.Errorf("/compat message %q does not say what the request needs against what is left", msg)
		}
	})
}
