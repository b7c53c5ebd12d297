package builtin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/modelexec/modelexec/internal/catalog"
)

// answered is a runner's document as the result read answers it: JSON, with every storage
// key replaced by a signed url (jobview.Result).
func answered(t *testing.T, doc map[string]any) any {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var sign func(any) any
	sign = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if k == "storage_key" {
					delete(x, k)
					x["url"] = "https://api.example.com/files/" + val.(string) + "?sig=x"
					continue
				}
				x[k] = sign(val)
			}
		case []any:
			for i := range x {
				x[i] = sign(x[i])
			}
		}
		return v
	}
	return sign(v)
}

// outputSchema is slug's output schema from its published OpenAPI document (CAT-15).
func outputSchema(t *testing.T, cat *catalog.Catalog, slug string) *openapi3.Schema {
	t.Helper()
	b, err := cat.ModelDocument(slug)
	if err != nil {
		t.Fatal(err)
	}
	d, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	ref := d.Components.Schemas[catalog.OutputSchemaName(slug)]
	if ref == nil || ref.Value == nil || len(ref.Value.Required) == 0 {
		t.Fatalf("%s: no specific output schema in its document", slug)
	}
	return ref.Value
}

// TestCAT15_OutputSchemasDescribeTheRunners proves that each model's published output schema
// (CAT-15's document) is what its built-in runner answers: every model's real output, as the
// result read answers it, validates against the schema, and so does the schema's example.
func TestCAT15_OutputSchemasDescribeTheRunners(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.in["https://x/ref.png"] = pngBytes(t, twoTone(40, 30))
	h.in["https://x/face.jpg"] = readTestdata(t, "astronaut.jpg")
	docs := map[string]map[string]any{}
	for _, slug := range generatorSlugs {
		docs[slug] = h.run(slug, map[string]any{"positivePrompt": "a lighthouse", "width": 64, "height": 48, "seed": 1, "steps": 2}).Document
	}
	docs[SlugImageEdit] = h.run(SlugImageEdit, map[string]any{"positivePrompt": "grade it", "width": 64, "height": 48, "seed": 1, "steps": 2,
		"inputs": map[string]any{"referenceImages": []string{"https://x/ref.png"}}}).Document
	docs[SlugUpscale] = h.run(SlugUpscale, map[string]any{"inputs": map[string]any{"image": "https://x/ref.png"}, "upscaleFactor": 2, "settings": map[string]any{"seed": 3}}).Document
	docs[SlugEyeMask] = h.run(SlugEyeMask, map[string]any{"inputs": map[string]any{"image": "https://x/face.jpg"}}).Document
	music, _, err := runMusic(t, context.Background(), map[string]any{"positivePrompt": "a short tune", "duration": 1, "seed": 7, "steps": 2, "outputFormat": "WAV"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs[SlugMusicTurbo] = music.Document

	for slug, doc := range docs {
		s := outputSchema(t, cat, slug)
		if err := s.VisitJSON(answered(t, doc)); err != nil {
			t.Errorf("%s: the runner's output does not match the published schema: %v", slug, err)
		}
		if s.Example == nil {
			t.Errorf("%s: output schema has no example", slug)
		} else if err := s.VisitJSON(s.Example); err != nil {
			t.Errorf("%s: the example does not match its schema: %v", slug, err)
		}
	}
	// The check bites: an image document without its images, or with a storage key left
	// unsigned, is refused.
	broken := answered(t, docs[SlugImage4B]).(map[string]any)
	delete(broken, "images")
	if outputSchema(t, cat, SlugImage4B).VisitJSON(broken) == nil {
		t.Error("an image output without images passed its schema")
	}
	raw, _ := json.Marshal(docs[SlugUpscale])
	var unsigned any
	if err := json.Unmarshal(raw, &unsigned); err != nil {
		t.Fatal(err)
	}
	if err := outputSchema(t, cat, SlugUpscale).VisitJSON(unsigned); err == nil {
		t.Error("an output carrying a storage key instead of a url passed its schema")
	}
	if len(docs) != len(cat.Models()) {
		t.Errorf("%d runners checked, %d models in the catalogue", len(docs), len(cat.Models()))
	}
}
