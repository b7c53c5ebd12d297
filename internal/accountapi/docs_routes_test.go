package accountapi_test

import (
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestERR01_DocsLinksResolve proves ERR-01's `docs` link leads to the code's entry: every
// catalogued code's link is under the account API's public URL and answers 200 over HTTP with
// an HTML page naming the code, without a key and with the keyless rate headers (RL-15); a
// real refusal's link does too; a code the catalogue lacks is not_found.
func TestERR01_DocsLinksResolve(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		for _, c := range apierr.Codes() {
			link := apierr.DocsURL(c)
			if !strings.HasPrefix(link, e.srv.URL+"/docs/errors/") {
				t.Fatalf("%s: docs link %q is not under the account API %s", c, link, e.srv.URL)
			}
			a := e.get(link, "")
			if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
				t.Fatalf("%s: %d %s %s", c, a.status, a.header.Get("Content-Type"), a.raw)
			}
			if !strings.Contains(string(a.raw), "<h1><code>"+string(c)+"</code></h1>") {
				t.Fatalf("%s: page does not name the code: %s", c, a.raw)
			}
			if en := apierr.Lookup(c); !strings.Contains(string(a.raw), "<code>"+string(en.Retry)+"</code>") {
				t.Fatalf("%s: page lacks the retry advice %s", c, en.Retry)
			}
			for _, h := range rateHeaders {
				if a.header.Get(h) == "" {
					t.Fatalf("%s: no %s header", c, h)
				}
			}
		}

		refusal := e.get("/v1/me", "")
		e.want(refusal, 401, "")
		link, _ := refusal.body["docs"].(string)
		code, _ := refusal.body["error"].(string)
		page := e.get(link, "")
		if page.status != 200 || !strings.Contains(string(page.raw), code) {
			t.Fatalf("refusal %s links %q: %d %s", code, link, page.status, page.raw)
		}

		index := e.get("/docs/errors", "")
		if index.status != 200 {
			t.Fatalf("index: %d %s", index.status, index.raw)
		}
		for _, c := range apierr.Codes() {
			if !strings.Contains(string(index.raw), `id="`+string(c)+`"`) {
				t.Fatalf("index lacks %s", c)
			}
		}

		missing := e.get("/docs/errors/no_such_code", "")
		e.want(missing, 404, string(apierr.NotFound))
		if msg, _ := missing.body["message"].(string); !strings.Contains(msg, "no_such_code") {
			t.Fatalf("message does not name the code: %s", missing.raw)
		}
	})
}
