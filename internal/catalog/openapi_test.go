package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
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
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff)", path)
	}
}

func indent(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestCAT15_17_ModelDocuments proves CAT-15..18 and VER-04: each model's document is OpenAPI
// 3.1.0 with info.version 1.0.0, carries the x-svc extensions with the price as published,
// and loads and validates with kin-openapi (which supports 3.1 documents: type arrays,
// const and JSON Schema 2020-12 keywords it knows; it does not assert every 2020-12 keyword).
func TestCAT15_17_ModelDocuments(t *testing.T) {
	c := mustDefault(t)
	for _, m := range c.Models() {
		b, err := c.ModelDocument(m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "openapi/"+m.Slug+".json", append(b, '\n'))
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if doc["openapi"] != "3.1.0" || doc["info"].(map[string]any)["version"] != "1.0.0" {
			t.Errorf("%s: version", m.Slug)
		}
		for _, k := range []string{"x-svc-model-id", "x-svc-hosted-by", "x-svc-scope", "x-svc-scopes", "x-svc-price", "x-svc-surface-enabled"} {
			if _, ok := doc[k]; !ok {
				t.Errorf("%s: no %s", m.Slug, k)
			}
		}
		price := doc["x-svc-price"].(map[string]any)
		rule := price["rule"].(map[string]any)
		band := rule["bands"].([]any)[0].(map[string]any)
		for _, k := range []string{"when", "credits_per_unit", "min_units", "max_units", "max_inputs"} {
			if _, ok := band[k]; !ok {
				t.Errorf("%s: band has no %s", m.Slug, k)
			}
		}
		if price["kind"] != "quoted" || price["metered"] != true || rule["counting"] != m.Price.Counting || rule["unit"] != m.Price.Unit {
			t.Errorf("%s: x-svc-price %v", m.Slug, price)
		}
		loader := openapi3.NewLoader()
		d, err := loader.LoadFromData(b)
		if err != nil {
			t.Fatalf("%s: load: %v", m.Slug, err)
		}
		if !d.IsOpenAPI31OrLater() {
			t.Errorf("%s: not read as 3.1", m.Slug)
		}
		if err := d.Validate(context.Background()); err != nil {
			t.Errorf("%s: invalid OpenAPI: %v", m.Slug, err)
		}
	}
	if _, err := c.ModelDocument("nope"); err == nil {
		t.Error("unknown slug")
	}
}

// TestCAT19_WholeContractParts checks the parts the whole-service document takes validate
// together as one 3.1 document with unique operation ids.
func TestCAT19_WholeContractParts(t *testing.T) {
	c := mustDefault(t)
	p := c.OpenAPIComponents()
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "modelexec", "version": "1.0.0"},
		"paths":   p.Paths,
		"components": map[string]any{
			"schemas":         p.Schemas,
			"securitySchemes": p.SecuritySchemes,
		},
	}
	b := indent(t, doc)
	d, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(p.Paths) != 9*6 {
		t.Errorf("%d paths", len(p.Paths))
	}
}

// TestCAT05_14_Views proves CAT-05, CAT-10 and CAT-14 (data side): the catalogue read has
// addresses with states; each model row prints its scope, lifecycle, expected_seconds,
// price, category and state. Golden files fix the JSON shapes.
func TestCAT05_14_Views(t *testing.T) {
	c := mustDefault(t)
	golden(t, "views/catalogue.json", indent(t, c.CatalogueView()))
	rows, _ := c.ModelRows("")
	golden(t, "views/models.json", indent(t, rows))
	for _, r := range rows {
		if r.Scope == "" || r.Lifecycle.Queue != "refuses" || r.Lifecycle.StallCeilingSeconds == 0 || r.ExpectedSeconds == 0 || r.Category == "" || r.State != Connected {
			t.Errorf("%s: %+v", r.ID, r)
		}
	}
	for _, m := range c.Models() {
		golden(t, "schema/"+m.Slug+".json", indent(t, m.InputSchema()))
	}
}
