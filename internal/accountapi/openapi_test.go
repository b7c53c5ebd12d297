package accountapi

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/modelexec/modelexec/internal/catalog"
)

// The -update flag rewrites the golden files. It is registered in init (after every
// package-level variable of the package) only when no other test file registered it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func openapiGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if updateGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/accountapi -run OpenAPI -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff)", path)
	}
}

func loadDocument(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	d, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !d.IsOpenAPI31OrLater() {
		t.Fatal("not read as OpenAPI 3.1")
	}
	if err := d.Validate(context.Background()); err != nil {
		t.Fatalf("invalid OpenAPI: %v", err)
	}
	return d
}

// TestCAT19_VER02_04_WholeDocument proves CAT-19, VER-02 and VER-04 on the document itself:
// it is OpenAPI 3.1.0 with info.version 1.0.0 and a single server entry with no /api prefix,
// loads and validates with kin-openapi, is fixed by a golden file, describes every account
// route (keyless ones with empty security), every error response references the Error
// schema, and it includes every model's queue and synchronous paths.
func TestCAT19_VER02_04_WholeDocument(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	b := Document(cat)
	openapiGolden(t, "openapi.json", b)
	if !bytes.Equal(b, Document(cat)) {
		t.Fatal("Document is not deterministic")
	}
	d := loadDocument(t, b)
	if d.OpenAPI != "3.1.0" || d.Info.Version != "1.0.0" {
		t.Errorf("openapi %s, info.version %s", d.OpenAPI, d.Info.Version)
	}
	if len(d.Servers) != 1 || d.Servers[0].URL != "/" {
		t.Errorf("servers = %v", d.Servers)
	}
	account := map[string][]string{
		"/v1/me":                            {"GET"},
		"/v1/catalogue":                     {"GET"},
		"/v1/models":                        {"GET"},
		"/v1/models/{address}":              {"GET"},
		"/v1/models/{address}/openapi.json": {"GET"},
		"/v1/openapi.json":                  {"GET"},
		"/v1/jobs":                          {"GET"},
		"/v1/jobs/{id}":                     {"GET"},
		"/v1/jobs/{id}/assets":              {"GET"},
		"/v1/usage":                         {"GET"},
		"/v1/usage/export":                  {"GET"},
		"/v1/uploads":                       {"POST"},
		"/v1/webhooks":                      {"GET", "POST"},
		"/v1/webhooks/{id}":                 {"DELETE", "POST"},
		"/.well-known/jwks.json":            {"GET"},
		"/files/{key}":                      {"GET", "PUT"},
	}
	keyless := map[string]bool{"/v1/catalogue": true, "/v1/openapi.json": true, "/.well-known/jwks.json": true, "/files/{key}": true}
	for path, methods := range account {
		item := d.Paths.Find(path)
		if item == nil {
			t.Errorf("no path %s", path)
			continue
		}
		var got []string
		for m, op := range item.Operations() {
			got = append(got, m)
			if op.Security == nil {
				t.Errorf("%s %s: no security stated", m, path)
			} else if keyless[path] != (len(*op.Security) == 0) {
				t.Errorf("%s %s: security %v (keyless %v)", m, path, *op.Security, keyless[path])
			}
			if op.OperationID == "" || op.Responses.Len() < 2 {
				t.Errorf("%s %s: operation id %q, %d responses", m, path, op.OperationID, op.Responses.Len())
			}
			for status, r := range op.Responses.Map() {
				if strings.HasPrefix(status, "2") {
					continue
				}
				mt := r.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Error" {
					t.Errorf("%s %s: %s does not reference Error", m, path, status)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, methods) {
			t.Errorf("%s: methods %v, want %v", path, got, methods)
		}
	}
	for _, m := range cat.Models() {
		base := "/" + catalog.Namespace + "/" + m.Slug
		for _, p := range []string{base, base + "/requests/{request_id}/status", base + "/requests/{request_id}", base + "/requests/{request_id}/cancel", "/" + m.Slug} {
			if d.Paths.Find(p) == nil {
				t.Errorf("model path %s missing", p)
			}
		}
		if d.Components.Schemas[catalog.SchemaName(m.Slug)] == nil {
			t.Errorf("schema of %s missing", m.Slug)
		}
	}
	for p := range d.Paths.Map() {
		if strings.HasPrefix(p, "/api") {
			t.Errorf("path %s has the withdrawn /api prefix", p)
		}
	}
	// The parameters of GET /v1/models.
	params := map[string]bool{}
	for _, p := range d.Paths.Find("/v1/models").Get.Parameters {
		params[p.Value.Name] = true
		if p.Value.Name == "limit" && (p.Value.Schema.Value.Max == nil || *p.Value.Schema.Value.Max != ListLimitMax) {
			t.Error("limit maximum is not 25")
		}
	}
	if !params["category"] || !params["expand"] || !params["limit"] {
		t.Errorf("GET /v1/models parameters %v", params)
	}
}

// TestVER02_WithServer shows the one server entry can name the public base URL.
func TestVER02_WithServer(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	d := loadDocument(t, Document(cat, WithServer("https://api.example.com")))
	if len(d.Servers) != 1 || d.Servers[0].URL != "https://api.example.com" {
		t.Errorf("servers = %v", d.Servers)
	}
}

// TestCAT19_DocumentAgreesWithRows checks the designed response schemas against the bodies the
// routes answer: every field of a model row and of the catalogue is described.
func TestCAT19_DocumentAgreesWithRows(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	d := loadDocument(t, Document(cat))
	check := func(schema string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		s := d.Components.Schemas[schema].Value
		for k := range m {
			if s.Properties[k] == nil {
				t.Errorf("%s: field %s not described", schema, k)
			}
		}
		for _, k := range s.Required {
			if _, ok := m[k]; !ok && k != "request_id" {
				t.Errorf("%s: required %s not answered", schema, k)
			}
		}
	}
	row := cat.Models()[0].Row()
	row.Document = json.RawMessage(`{}`)
	check("ModelRow", row)
	check("Catalogue", cat.CatalogueView())
}
