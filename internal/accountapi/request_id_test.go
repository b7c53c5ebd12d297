package accountapi_test

import (
	"encoding/json"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestERR06_AccountAnswersCarryTheHTTPRequestID proves ERR-06 on the account API: every answer's
// body carries the HTTP request id (X-Request-Id) in request_id, the job record's included. The
// job's queue request id (the id in its queue URLs) is queue_request_id, on the single read and
// on the list items alike, and the served OpenAPI document describes it. SQLite and PostgreSQL.
func TestERR06_AccountAnswersCarryTheHTTPRequestID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_reqid")
		j := e.settle(e.submit(key, "image-lite", `{"positivePrompt":"a lighthouse"}`, "rid1"))

		sameID := func(path string, a accAnswer) {
			t.Helper()
			hdr := a.header.Get("X-Request-Id")
			if hdr == "" || a.body["request_id"] != hdr {
				t.Errorf("GET %s: body request_id %v, X-Request-Id %q (%s)", path, a.body["request_id"], hdr, a.raw)
			}
		}

		rec := e.get("/v1/jobs/"+j.ID, key)
		e.want(rec, 200, "")
		sameID("/v1/jobs/{id}", rec)
		if rec.body["queue_request_id"] != j.RequestID || rec.body["request_id"] == j.RequestID {
			t.Errorf("job record: queue_request_id %v, request_id %v; the job's queue request id is %s (%s)",
				rec.body["queue_request_id"], rec.body["request_id"], j.RequestID, rec.raw)
		}

		list := e.get("/v1/jobs", key)
		e.want(list, 200, "")
		sameID("/v1/jobs", list)
		if len(items(list)) != 1 {
			t.Fatalf("list = %s", list.raw)
		}
		it := items(list)[0]
		if it["queue_request_id"] != j.RequestID {
			t.Errorf("list item queue_request_id %v, want %s (%s)", it["queue_request_id"], j.RequestID, list.raw)
		}
		if _, ok := it["request_id"]; ok {
			t.Errorf("list item carries a request_id of its own: %s", list.raw)
		}

		// The other reads of the account API, answers and refusals alike.
		for _, path := range []string{"/v1/me", "/v1/catalogue", "/v1/models", "/v1/models/svc-serverless/image-lite",
			"/v1/jobs/" + j.ID + "/assets", "/v1/jobs/photo_missing", "/v1/usage", "/v1/webhooks", "/v1/chat/conversations"} {
			sameID(path, e.get(path, key))
		}

		doc := e.get("/v1/openapi.json", "")
		e.want(doc, 200, "")
		var whole struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]any `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(doc.raw, &whole); err != nil {
			t.Fatal(err)
		}
		if whole.Components.Schemas["Job"].Properties["queue_request_id"] == nil {
			t.Errorf("the OpenAPI document's Job lacks queue_request_id")
		}
	})
}
