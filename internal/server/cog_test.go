package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/runners/cog"
)

// refusingBody fails the test if the handler reads it.
type refusingBody struct{ t *testing.T }

func (b refusingBody) Read([]byte) (int, error) {
	b.t.Error("the body of an unauthenticated webhook was read")
	return 0, http.ErrBodyReadAfterClose
}
func (refusingBody) Close() error { return nil }

// Issue 30 (item 2): the Cog webhook checks the prediction's token before it reads a byte of
// the body, and answers a wrong or missing one 404 in the error format; an unknown model slug
// too.
func TestCogWebhookChecksTheTokenFirst(t *testing.T) {
	rn, err := cog.New(cog.Config{BaseURL: "http://127.0.0.1:1", WebhookURL: "http://127.0.0.1:2/internal/cog/m",
		MapURLs: func(raw []byte, _ func([]string, string) (string, error)) ([]byte, error) { return raw, nil }})
	if err != nil {
		t.Fatal(err)
	}
	h := withCogHooks(http.NotFoundHandler(), map[string]*cog.Runner{"m": rn})
	for _, target := range []string{"/internal/cog/m?id=x&token=y", "/internal/cog/m", "/internal/cog/other?id=x&token=y"} {
		r := httptest.NewRequest(http.MethodPost, target, nil)
		r.Body, r.ContentLength = refusingBody{t}, 60<<20
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body struct{ Error string }
		if w.Code != http.StatusNotFound || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Error != "not_found" ||
			!strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("%s: %d %q %s", target, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
}
