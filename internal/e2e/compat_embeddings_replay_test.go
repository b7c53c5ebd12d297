package e2e_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestJOB28_CompatEmbeddingsReplayKeepsDimensions proves JOB-28 on /compat/v1/embeddings: a
// replay answers the first call's vectors at the dimensions the first call asked for,
// whatever dimensions the replay sends (or none), in the replay's own encoding; a key an
// embeddings call holds sent to a chat route answers the same vectors.
func TestJOB28_CompatEmbeddingsReplayKeepsDimensions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		m := newUpstreamHarness(t, db, newMockUpstream(t))
		url := m.api.URL + "/compat/v1/embeddings"
		key := []string{"Idempotency-Key", "fox-4"}
		vector := func(r resp) []any {
			data, _ := r.Body["data"].([]any)
			if len(data) != 1 {
				t.Fatalf("embeddings: %d %s", r.Code, r.Raw)
			}
			v, _ := data[0].(map[string]any)["embedding"].([]any)
			return v
		}
		first := m.call(http.MethodPost, url, `{"model":"embed-small","input":"a red fox","dimensions":4,"encoding_format":"float"}`, key...)
		if first.Code != http.StatusOK || len(vector(first)) != 4 {
			t.Fatalf("first call: %d %s, want 4 values", first.Code, first.Raw)
		}
		for _, body := range []string{
			`{"model":"embed-small","input":"a red fox","encoding_format":"float"}`,
			`{"model":"embed-small","input":"a red fox","dimensions":8}`,
		} {
			again := m.call(http.MethodPost, url, body, key...)
			if again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("X-Job-Id") != first.Header.Get("X-Job-Id") {
				t.Fatalf("replay %s: not the first call's job: %d %v", body, again.Code, again.Header)
			}
			if got := vector(again); fmt.Sprint(got) != fmt.Sprint(vector(first)) {
				t.Fatalf("replay %s: %d values %v, want the first call's %v", body, len(got), got, vector(first))
			}
		}
		b64 := m.call(http.MethodPost, url, `{"model":"embed-small","input":"a red fox","encoding_format":"base64"}`, key...)
		data, _ := b64.Body["data"].([]any)
		if s, _ := data[0].(map[string]any)["embedding"].(string); len(s) != len("AAAAAAAAAAAAAAAAAAAAAA==") {
			t.Fatalf("base64 replay: %s, want 4 float32s in base64", b64.Raw)
		}
		chat := m.call(http.MethodPost, m.api.URL+"/compat/v1/chat/completions", `{"model":"qwen","messages":[{"role":"user","content":"x"}]}`, key...)
		if chat.Code != http.StatusOK || fmt.Sprint(vector(chat)) != fmt.Sprint(vector(first)) {
			t.Fatalf("key sent to chat completions: %d %s, want the first call's 4 values", chat.Code, chat.Raw)
		}
	})
}
