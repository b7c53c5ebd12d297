package catalog

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchemas(t testing.TB, c *Catalog) map[string]*jsonschema.Schema {
	t.Helper()
	out := map[string]*jsonschema.Schema{}
	for _, m := range c.Models() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(encode(t, m.InputSchema())))
		if err != nil {
			t.Fatal(err)
		}
		comp := jsonschema.NewCompiler()
		url := "https://modelexec.dev/schemas/" + m.Slug + ".json"
		if err := comp.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		s, err := comp.Compile(url)
		if err != nil {
			t.Fatalf("%s: %v", m.Slug, err)
		}
		out[m.Slug] = s
	}
	return out
}

// schemaAccepts validates body against the compiled schema.
func schemaAccepts(t testing.TB, s *jsonschema.Schema, body []byte) bool {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v) == nil
}

// TestCAT04_SchemaAgreesWithValidator proves the published JSON Schema and the validator are
// one contract: on every generated edge case, every cross-field case, the base bodies and a
// few hand-written inputs, jsonschema/v6 (draft 2020-12) accepts exactly what the validator's
// structural check accepts. Cross-field rules are not in the schema by design: they warn
// before the enforcement date.
func TestCAT04_SchemaAgreesWithValidator(t *testing.T) {
	c := mustDefault(t)
	schemas := compileSchemas(t, c)
	type sample struct {
		slug string
		body []byte
	}
	var corpus []sample
	for _, e := range edgeCases(t, c) {
		corpus = append(corpus, sample{e.slug, e.body})
	}
	for _, x := range crossCases {
		corpus = append(corpus, sample{x.slug, merged(t, x.slug, x.patch)})
	}
	for slug, b := range baseBodies {
		corpus = append(corpus, sample{slug, []byte(b)}, sample{slug, []byte(`{}`)},
			sample{slug, merged(t, slug, `{"idempotency_key":"abc-1"}`)},
			sample{slug, merged(t, slug, `{"seed":1e3,"width":1.0e3,"height":1000.0}`)},
			sample{slug, merged(t, slug, `{"steps":null}`)})
	}
	n := 0
	for _, s := range corpus {
		m := mustModel(t, c, s.slug)
		_, _, err := m.Validate(s.body, beforeEnforcement, fixedSeed)
		mine := violations(err) == nil
		theirs := schemaAccepts(t, schemas[s.slug], s.body)
		if mine != theirs {
			t.Errorf("%s: validator accepts=%v, schema accepts=%v (%v)\n%s", s.slug, mine, theirs, err, s.body)
		}
		n++
	}
	if n < 1000 {
		t.Errorf("corpus of %d only", n)
	}
}

// TestSchemaShapes spot-checks the generated schema.
func TestSchemaShapes(t *testing.T) {
	c := mustDefault(t)
	s := mustModel(t, c, "image-4b").InputSchema()
	b, _ := json.Marshal(s)
	for _, want := range []string{`"$schema":"https://json-schema.org/draft/2020-12/schema"`, `"additionalProperties":false`, `"maximum":9223372036854775807`, `"required":["positivePrompt"]`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("schema lacks %s", want)
		}
	}
}
