package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/httpapi"
)

// bodyRoutes are the routes that read a JSON body, on the surface (index into fuzzSurfaces)
// that serves them.
var bodyRoutes = []struct {
	surface int
	path    string
}{
	{1, "/svc-serverless/image-lite"}, {2, "/svc-serverless/image-lite"}, {0, "/v1/webhooks"}, {0, "/v1/uploads"},
	{0, "/v1/chat"}, {0, "/v1/chat/conversations"}, {0, "/v1/embeddings"},
	{0, "/compat/v1/chat/completions"}, {0, "/compat/v1/embeddings"}, {0, "/compat/v1/responses"},
}

// fuzzBody is a JSON object up to 1 MiB whose field a holds elem repeated count times (as
// many as fit), nested depth arrays deep; the fields a route reads sit beside it.
func fuzzBody(elem string, count, depth int) []byte {
	head := `{"positivePrompt":"a fox","model":"qwen","input":"x","messages":[{"role":"user","content":"hi"}],"url":"https://example.com/h","a":`
	open, closing := strings.Repeat("[", depth), strings.Repeat("]", depth)
	room := httpapi.MaxBody - len(head) - len(open) - len(closing) - 3
	if elem == "" || room <= 0 {
		return []byte(head + open + "[]" + closing + "}")
	}
	count = min(count, room/(len(elem)+1))
	items := strings.TrimSuffix(strings.Repeat(elem+",", max(count, 1)), ",")
	return []byte(head + open + "[" + items + "]" + closing + "}")
}

// FuzzBodyBounds sends every route that reads a JSON body a body of up to 1 MiB built from
// large arrays of small values and deep nesting. Whatever arrives: no 500, and what the server
// allocates to answer stays a small multiple of the body (8 times its size, plus 1 MiB for the
// work of any request): a body must never be decoded into a tree many times its size.
func FuzzBodyBounds(f *testing.F) {
	surfaces, key := fuzzSurfaces(f)
	for _, s := range []struct {
		route        uint8
		elem         string
		count, depth uint32
	}{
		{0, "{}", 1 << 20, 0}, {1, "0", 1 << 20, 0}, {2, "{}", 1 << 20, 0}, {3, "[]", 1 << 20, 0},
		{4, `{"role":"user","content":""}`, 1 << 20, 0}, {5, `""`, 1 << 20, 0}, {6, `"a"`, 1 << 20, 0},
		{7, `{}`, 1 << 20, 0}, {8, `""`, 1 << 20, 0}, {9, "null", 1 << 20, 0},
		{0, "0", 1, 9000}, {4, "0", 1, 9000}, {7, "{}", 10, 5000}, {1, `{"a":[0,0]}`, 1 << 20, 30},
	} {
		f.Add(s.route, s.elem, s.count, s.depth)
	}
	f.Fuzz(func(t *testing.T, route uint8, elem string, count, depth uint32) {
		rt := bodyRoutes[int(route)%len(bodyRoutes)]
		body := fuzzBody(elem, int(count), int(depth%10_000))
		req := httptest.NewRequest(http.MethodPost, rt.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		rctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec := httptest.NewRecorder()
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		surfaces[rt.surface].ServeHTTP(rec, req.WithContext(rctx))
		runtime.ReadMemStats(&m1)
		t.Logf("POST %s: %d bytes → %d, %.2f MiB allocated", rt.path, len(body), rec.Code, float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20))
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("POST %s (%d-byte body) answered %d: %.500s", rt.path, len(body), rec.Code, rec.Body)
		}
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 8*uint64(len(body))+1<<20 {
			t.Fatalf("POST %s: a %d-byte body (%.40s…) answered %d after allocating %.1f MiB: %.300s",
				rt.path, len(body), body[len(body)-min(len(body), 40):], rec.Code, float64(alloc)/(1<<20), rec.Body)
		}
	})
}
