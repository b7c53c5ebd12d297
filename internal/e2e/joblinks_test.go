package e2e_test

import (
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestJOB24_LanguageJobRecordsHaveNoQueueLinks: the job record of a language model's call (a
// /compat/v1 chat completion, embeddings), read at GET /v1/jobs/{id} and in GET /v1/jobs,
// carries no status_url or response_url: the model has no address on the queue host, where
// such links answered 404 "No model at svc-serverless/qwen". A queue-host model's job keeps
// both, and they answer.
func TestJOB24_LanguageJobRecordsHaveNoQueueLinks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarnessOn(t, db, blobs.NewMemory(), func(c *server.Config) { c.ReferenceModels = true })
		c := h.call(http.MethodPost, h.api.URL+"/compat/v1/chat/completions", `{"model":"qwen","messages":[{"role":"user","content":"x"}],"max_tokens":20}`)
		if c.Code != http.StatusOK {
			t.Fatalf("chat completion: %d %s", c.Code, c.Raw)
		}
		if e := h.call(http.MethodPost, h.api.URL+"/compat/v1/embeddings", `{"model":"embed-small","input":"a b c"}`); e.Code != http.StatusOK {
			t.Fatalf("embeddings: %d %s", e.Code, e.Raw)
		}
		p := h.submit("image-turbo", "", `{"positivePrompt":"a cat","width":512,"height":512}`)
		if p.Code != http.StatusOK {
			t.Fatalf("photo submit: %d %s", p.Code, p.Raw)
		}
		h.waitSettled(p.str("request_id"))

		check := func(where string, rec map[string]any) {
			t.Helper()
			product, _ := rec["product"].(string)
			_, hasStatus := rec["status_url"]
			_, hasResponse := rec["response_url"]
			switch product {
			case "chat", "embeddings":
				if hasStatus || hasResponse {
					t.Errorf("%s: the %s job carries queue-host links: %v", where, product, rec)
				}
			default:
				su, _ := rec["status_url"].(string)
				ru, _ := rec["response_url"].(string)
				if st := h.call(http.MethodGet, su, ""); st.Code != http.StatusOK || st.str("status") != "COMPLETED" {
					t.Errorf("%s: the %s job's status_url %q: %d %s", where, product, su, st.Code, st.Raw)
				}
				if rs := h.call(http.MethodGet, ru, ""); rs.Code != http.StatusOK {
					t.Errorf("%s: the %s job's response_url %q: %d %s", where, product, ru, rs.Code, rs.Raw)
				}
			}
		}
		list := h.call(http.MethodGet, h.api.URL+"/v1/jobs", "")
		data, _ := list.Body["data"].([]any)
		if list.Code != http.StatusOK || len(data) != 3 {
			t.Fatalf("GET /v1/jobs: %d %s", list.Code, list.Raw)
		}
		for _, d := range data {
			rec, _ := d.(map[string]any)
			check("GET /v1/jobs", rec)
			id, _ := rec["id"].(string)
			one := h.call(http.MethodGet, h.api.URL+"/v1/jobs/"+id, "")
			if one.Code != http.StatusOK {
				t.Fatalf("GET /v1/jobs/%s: %d %s", id, one.Code, one.Raw)
			}
			check("GET /v1/jobs/"+id, one.Body)
		}
	})
}
