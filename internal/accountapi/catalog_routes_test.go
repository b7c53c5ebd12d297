package accountapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/modelexec/modelexec/internal/catalog"
)

// TestCAT05_CatalogueWithoutKey proves CAT-05: GET /v1/catalogue answers without a key, with
// addresses giving each address's state; a key is not needed but does no harm.
func TestCAT05_CatalogueWithoutKey(t *testing.T) {
	f := newCatFixture(t)
	for _, keyed := range []bool{false, true} {
		status, body := f.getJSON(t, "/v1/catalogue", keyed)
		if status != http.StatusOK || body["object"] != "catalogue" || body["request_id"] == nil {
			t.Fatalf("keyed=%v: %d %v", keyed, status, body)
		}
		addrs, _ := body["addresses"].(map[string]any)
		if len(addrs) != len(f.cat.Models()) {
			t.Fatalf("addresses = %v", addrs)
		}
		for _, m := range f.cat.Models() {
			st := addrs[m.Address]
			if !slices.Contains([]any{"connected", "described", "paused"}, st) {
				t.Errorf("%s: state %v", m.Address, st)
			}
		}
	}
}

// TestCAT10_20_ModelsList proves CAT-10, CAT-20 (list) and the list shape: a key holding no
// write scope reads every row; each row shows lifecycle.queue refuses and its stall ceiling;
// without a key the route is refused missing_authorization.
func TestCAT10_20_ModelsList(t *testing.T) {
	f := newCatFixture(t)
	status, _, b := f.get(t, "/v1/models", true)
	var list struct {
		Object    string             `json:"object"`
		Data      []catalog.ModelRow `json:"data"`
		RequestID string             `json:"request_id"`
	}
	if err := json.Unmarshal(b, &list); err != nil || status != http.StatusOK {
		t.Fatalf("%d %s %v", status, b, err)
	}
	if list.Object != "list" || list.RequestID == "" || len(list.Data) != len(f.cat.Models()) {
		t.Fatalf("list = %s", b)
	}
	for i, m := range f.cat.Models() {
		r := list.Data[i]
		if r.ID != m.Address || r.Lifecycle.Queue != catalog.QueueRefuses || r.Lifecycle.StallCeilingSeconds <= 0 || r.Scope == "" {
			t.Errorf("row %d = %+v", i, r)
		}
		if r.Document != nil {
			t.Errorf("%s: openapi_document without expand", r.ID)
		}
	}
	status, body := f.getJSON(t, "/v1/models", false)
	catWantError(t, "/v1/models", status, body, http.StatusUnauthorized, "missing_authorization")
}

// TestCAT11_CategoryFilter proves CAT-11: ?category= filters by task; an unknown category is
// 400 invalid_category carrying category and categories.
func TestCAT11_CategoryFilter(t *testing.T) {
	f := newCatFixture(t)
	for _, c := range f.cat.Categories() {
		status, _, b := f.get(t, "/v1/models?category="+url.QueryEscape(c), true)
		var list struct{ Data []catalog.ModelRow }
		if err := json.Unmarshal(b, &list); err != nil || status != http.StatusOK {
			t.Fatalf("%s: %d %s", c, status, b)
		}
		want := 0
		for _, m := range f.cat.Models() {
			if m.Category == c {
				want++
			}
		}
		if len(list.Data) != want {
			t.Errorf("%s: %d rows, want %d", c, len(list.Data), want)
		}
		for _, r := range list.Data {
			if r.Category != c {
				t.Errorf("%s: row %s has category %s", c, r.ID, r.Category)
			}
		}
	}
	path := "/v1/models?category=nope"
	status, body := f.getJSON(t, path, true)
	catWantError(t, path, status, body, http.StatusBadRequest, "invalid_category", "category", "categories")
	if body["category"] != "nope" || fmt.Sprint(body["categories"]) != fmt.Sprint(f.cat.Categories()) {
		t.Errorf("carried: %v", body)
	}
}

// TestCAT12_Expand proves CAT-12: expand takes only openapi; any other value is 400
// invalid_expand carrying expand. With openapi each row carries its model's document.
func TestCAT12_Expand(t *testing.T) {
	f := newCatFixture(t)
	for _, v := range []string{"schema", "OpenAPI", "openapi,price", "x"} {
		path := "/v1/models?expand=" + url.QueryEscape(v)
		status, body := f.getJSON(t, path, true)
		catWantError(t, path, status, body, http.StatusBadRequest, "invalid_expand", "expand")
		if body["expand"] != v {
			t.Errorf("%s: expand = %v", path, body["expand"])
		}
	}
	status, _, b := f.get(t, "/v1/models?expand=openapi&limit=25", true)
	var list struct{ Data []catalog.ModelRow }
	if err := json.Unmarshal(b, &list); err != nil || status != http.StatusOK {
		t.Fatalf("%d %s", status, b)
	}
	for _, r := range list.Data {
		want, err := f.cat.ModelDocument(r.Slug)
		if err != nil {
			t.Fatal(err)
		}
		var got, w any
		if json.Unmarshal(r.Document, &got) != nil || json.Unmarshal(want, &w) != nil || fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: openapi_document differs from the model's document", r.ID)
		}
	}
}

// TestCAT13_ExpandLimit proves CAT-13 and DESIGN 21: with expand=openapi limit defaults to 10
// and is capped at 25; above, not an integer or below 1 is 400 invalid_limit carrying max 25.
func TestCAT13_ExpandLimit(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	n := len(cat.Models())
	f := newCatFixture(t)
	count := func(path string) int {
		t.Helper()
		status, _, b := f.get(t, path, true)
		var list struct{ Data []catalog.ModelRow }
		if err := json.Unmarshal(b, &list); err != nil || status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, status, b)
		}
		return len(list.Data)
	}
	for path, want := range map[string]int{
		"/v1/models?expand=openapi":          min(n, ExpandLimitDefault),
		"/v1/models?expand=openapi&limit=1":  1,
		"/v1/models?expand=openapi&limit=3":  3,
		"/v1/models?expand=openapi&limit=25": n,
		"/v1/models?limit=2":                 2,
		"/v1/models":                         n,
	} {
		if got := count(path); got != want {
			t.Errorf("%s: %d rows, want %d", path, got, want)
		}
	}
	for _, l := range []string{"26", "100", "0", "-1", "ten", "2.5", ""} {
		path := "/v1/models?expand=openapi&limit=" + url.QueryEscape(l)
		status, body := f.getJSON(t, path, true)
		catWantError(t, path, status, body, http.StatusBadRequest, "invalid_limit", "max")
		if body["max"] != float64(ModelsLimitMax) {
			t.Errorf("%s: max = %v", path, body["max"])
		}
	}
	// Without expand=openapi the 25 does not apply: a list takes 1 to 100 (spec 02, invalid_limit).
	for path, want := range map[string]int{"/v1/models?limit=26": n, "/v1/models?limit=100": n} {
		if got := count(path); got != want {
			t.Errorf("%s: %d rows, want %d", path, got, want)
		}
	}
	for _, l := range []string{"101", "0", "ten"} {
		path := "/v1/models?limit=" + l
		status, body := f.getJSON(t, path, true)
		catWantError(t, path, status, body, http.StatusBadRequest, "invalid_limit", "max")
		if body["max"] != float64(ListLimitMax) {
			t.Errorf("%s: max = %v, want %d", path, body["max"], ListLimitMax)
		}
	}
}

// TestCAT13_LimitRule proves the limit rule itself (the default catalogue has fewer than ten
// models, so the default of 10 cannot show over HTTP): absent it is 10 with expand=openapi and
// unlimited without; a repeated limit is refused.
func TestCAT13_LimitRule(t *testing.T) {
	if n, err := parseModelsLimit(nil, true); err != nil || n != 10 {
		t.Fatalf("default = %d %v", n, err)
	}
	if n, err := parseModelsLimit(nil, false); err != nil || n != 0 {
		t.Fatalf("without expand: %d %v", n, err)
	}
	if n, err := parseModelsLimit([]string{"25"}, true); err != nil || n != 25 {
		t.Fatalf("25: %d %v", n, err)
	}
	if _, err := parseModelsLimit([]string{"5", "6"}, true); err == nil {
		t.Fatal("a repeated limit is refused")
	}
}

// TestCAT14_20_ModelRow proves CAT-14 and CAT-20 (one model): GET /v1/models/{address}
// prints the scope the address asks for, read with a key holding none of the model's scopes.
func TestCAT14_20_ModelRow(t *testing.T) {
	f := newCatFixture(t)
	for _, m := range f.cat.Models() {
		path := "/v1/models/" + m.Address
		status, _, b := f.get(t, path, true)
		var row catalog.ModelRow
		if err := json.Unmarshal(b, &row); err != nil || status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, status, b)
		}
		if row.Object != "model" || row.ID != m.Address || row.Scope != m.Scope.Required || !slices.Equal(row.Scopes, m.Scope.Accepted) {
			t.Errorf("%s: %+v", path, row)
		}
		var top map[string]any
		_ = json.Unmarshal(b, &top)
		if top["request_id"] == nil || top["scope"] == "" {
			t.Errorf("%s: %s", path, b)
		}
	}
	status, body := f.getJSON(t, "/v1/models/"+f.cat.Models()[0].Address, false)
	catWantError(t, "keyless model read", status, body, http.StatusUnauthorized, "missing_authorization")
}

// TestCAT15_20_ModelDocumentRoute proves CAT-15, CAT-16 and CAT-20 over HTTP: the model's own
// document is served as its bytes, application/json, OpenAPI 3.1.0 with info.version 1.0.0 and
// the x-svc extensions, to a key holding no model scope.
func TestCAT15_20_ModelDocumentRoute(t *testing.T) {
	f := newCatFixture(t)
	for _, m := range f.cat.Models() {
		path := "/v1/models/" + m.Address + "/openapi.json"
		status, h, b := f.get(t, path, true)
		if status != http.StatusOK || h.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s", path, status, h.Get("Content-Type"))
		}
		want, _ := f.cat.ModelDocument(m.Slug)
		if string(b) != string(want) {
			t.Errorf("%s: body is not the model's document", path)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if doc["openapi"] != "3.1.0" || doc["info"].(map[string]any)["version"] != "1.0.0" || doc["x-svc-model-id"] != m.Address {
			t.Errorf("%s: %v %v", path, doc["openapi"], doc["info"])
		}
		for _, k := range []string{"x-svc-hosted-by", "x-svc-scope", "x-svc-scopes", "x-svc-price", "x-svc-surface-enabled"} {
			if doc[k] == nil {
				t.Errorf("%s: no %s", path, k)
			}
		}
	}
}

// TestDESIGN29_UnknownAddress proves DESIGN 29 on the account API: an unknown model address
// (and the document path under it, and the bare prefix) is 404 not_found.
func TestDESIGN29_UnknownAddress(t *testing.T) {
	f := newCatFixture(t)
	for _, path := range []string{
		"/v1/models/svc-serverless/nope",
		"/v1/models/svc-serverless/nope/openapi.json",
		"/v1/models/image-4b",
		"/v1/models/svc-serverless",
		"/v1/models/",
		"/v1/models/svc-serverless/image-4b/extra",
		"/v1/models/svc-serverless/image-4b/openapi.json/openapi.json",
	} {
		status, body := f.getJSON(t, path, true)
		catWantError(t, path, status, body, http.StatusNotFound, "not_found")
	}
}

// TestCAT19_VER04_OpenAPIWithoutKey proves CAT-19 and VER-04: GET /v1/openapi.json is the
// static whole contract, served without a key and before any key check (a malformed key is
// not even read).
func TestCAT19_VER04_OpenAPIWithoutKey(t *testing.T) {
	f := newCatFixture(t)
	want := Document(f.cat)
	for _, auth := range []string{"", "Bearer not-a-key"} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/openapi.json", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		got, err = catReadAll(resp)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("auth %q: %d %v", auth, resp.StatusCode, err)
		}
		if string(got) != string(want) {
			t.Errorf("auth %q: body differs from Document", auth)
		}
	}
}

// TestVER01_03_NoAPIPrefix proves VER-01 and VER-03 on these routes: the catalogue answers
// under /v1 with nothing before it; the /api-prefixed form is 404.
func TestVER01_03_NoAPIPrefix(t *testing.T) {
	f := newCatFixture(t)
	for _, path := range []string{"/api/v1/catalogue", "/api/v1/models", "/api/v1/openapi.json", "/api/v1/models/svc-serverless/image-4b"} {
		status, body := f.getJSON(t, path, true)
		catWantError(t, path, status, body, http.StatusNotFound, "not_found")
	}
}

// TestCAT05_OriginRefusedOnPublic shows the keyless routes still run the checks before the
// key: a browser Origin is refused on the catalogue and the contract.
func TestCAT05_OriginRefusedOnPublic(t *testing.T) {
	f := newCatFixture(t)
	for _, path := range []string{"/v1/catalogue", "/v1/openapi.json"} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.Header.Set("Origin", "https://example.com")
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := catReadAll(resp)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		if resp.StatusCode == http.StatusOK || body["error"] != "browser_origin_refused" {
			t.Errorf("%s with Origin: %d %s", path, resp.StatusCode, b)
		}
	}
}
