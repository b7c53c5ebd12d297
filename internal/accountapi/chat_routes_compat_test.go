package accountapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// TestORD02_CompatBareNameReachesItsChecks: /compat/v1 without its slash goes to the
// compatibility surface, whose fallback runs checks 1 and 2 (the Origin refusal) before its
// 404, instead of ServeMux's 307 to /compat/v1/ that no check has seen.
func TestORD02_CompatBareNameReachesItsChecks(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }
	log := slog.New(slog.DiscardHandler)
	compat := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := &Handler{Gate: &httpapi.Gate{Now: now, Log: log}, Catalog: cat, Now: now, Log: log, OpenAPI: Document(cat), Compat: compat}
	for _, path := range []string{"/compat/v1", "/compat/v1/", "/compat/v1/models"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("Origin", "https://app.example")
		h.Routes().ServeHTTP(w, r)
		if w.Code != http.StatusTeapot {
			t.Fatalf("GET %s: %d %s, want the compatibility surface to answer", path, w.Code, w.Body)
		}
	}
}
