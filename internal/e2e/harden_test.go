package e2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSUB08_WebhookRefusalWrittenForUsers proves SUB-08 from the reader's side: a per-request
// webhook refused by the URL policy says why in words for the person who sent it (the message
// and the detail's msg), never a Go error chain such as "webhook: webhooks: invalid url:
// private_host: 127.0.0.1"; the machine-readable reason stays in `reason`.
func TestSUB08_WebhookRefusalWrittenForUsers(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		ok := `{"positivePrompt":"ok"}`
		for _, c := range []struct{ hook, reason, says string }{
			{"https://127.0.0.1/h", "private_host", "public host"},
			{"https://10.0.0.7/h", "private_host", "public host"},
			{"http://hooks.example.com/h", "not_https", "https"},
			{"https://user:pw@hooks.example.com/h", "has_userinfo", "password"},
			{"https://hooks.example.com/" + strings.Repeat("a", 2000), "too_long", "2000 characters"},
			{"https://%zz/h", "", "webhook URL"},
		} {
			r := h.submit(mFast, "webhook="+url.QueryEscape(c.hook), ok)
			if r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_url" {
				t.Fatalf("%s: %d %s", c.hook, r.Code, r.Raw)
			}
			if c.reason != "" && r.str("reason") != c.reason {
				t.Errorf("%s: reason %q, want %q", c.hook, r.str("reason"), c.reason)
			}
			msgs := []string{r.str("message")}
			if d, _ := r.Body["detail"].([]any); len(d) == 1 {
				m, _ := d[0].(map[string]any)
				s, _ := m["msg"].(string)
				msgs = append(msgs, s)
			} else {
				t.Errorf("%s: detail %v", c.hook, r.Body["detail"])
			}
			for _, m := range msgs {
				if !strings.HasPrefix(m, "The webhook URL") || !strings.Contains(m, c.says) {
					t.Errorf("%s: message %q does not say why (%q)", c.hook, m, c.says)
				}
				for _, leak := range []string{"webhooks:", "webhook:", "invalid url", "private_host", "parse ", "has_userinfo"} {
					if strings.Contains(m, leak) {
						t.Errorf("%s: message %q carries %q", c.hook, m, leak)
					}
				}
			}
		}
	})
}
