package e2e_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestERR85_PathsNotUTF8AreNotFound: a path value whose decoded bytes are not UTF-8 (%FF, an
// encoded surrogate) names nothing: 404 not_found in the error body on every host and route,
// on both databases; on PostgreSQL it reached a query that refused the bytes and answered 500
// (job_read_failed, webhook_read_failed, internal). Proves ERR-85 for such paths.
func TestERR85_PathsNotUTF8AreNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarness(t, db)
		every, err := h.auth.Mint(context.Background(), auth.MintParams{AccountID: h.account, Scopes: auth.Current})
		if err != nil {
			t.Fatal(err)
		}
		q := h.queue.URL + "/svc-serverless/" + mFast + "/requests/"
		for _, c := range []struct{ method, url string }{
			{"GET", h.api.URL + "/v1/jobs/%FF"},
			{"GET", h.api.URL + "/v1/jobs/req_%ED%A0%80"},
			{"GET", h.api.URL + "/v1/jobs/%FF/assets"},
			{"GET", h.api.URL + "/v1/chat/conversations/%FF"},
			{"POST", h.api.URL + "/v1/webhooks/wh_%FF"},
			{"DELETE", h.api.URL + "/v1/webhooks/wh_%FF"},
			{"GET", h.api.URL + "/v1/studio/projects/%FF/brief"},
			{"GET", h.api.URL + "/v1/studio/projects/p/canvases/%FF"},
			{"GET", q + "%FF/status"},
			{"GET", q + "%FF/status/stream"},
			{"GET", q + "%FF"},
			{"PUT", q + "%FF/cancel"},
			{"POST", h.sync.URL + "/svc-serverless/%FF"},
		} {
			r := h.callKey(every.Key, c.method, c.url, "")
			if r.Code != http.StatusNotFound || r.str("error") != "not_found" || r.str("request_id") != r.Header.Get("X-Request-Id") {
				t.Errorf("%s %s: %d %s", c.method, c.url, r.Code, r.Raw)
			}
		}
	})
}
