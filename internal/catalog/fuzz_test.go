package catalog

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzValidate feeds arbitrary bytes to every model's validator and quotes what it accepts:
// no input may panic, every refusal is an *InvalidError or *NotPricedError, and an accepted
// input is a JSON object.
func FuzzValidate(f *testing.F) {
	for _, b := range baseBodies {
		f.Add([]byte(b))
	}
	for _, x := range crossCases {
		f.Add([]byte(x.patch))
	}
	for _, s := range []string{
		``, `null`, `[]`, `{`, `{"seed":1e999999999999}`, `{"width":-1e-99999,"height":1E400}`,
		`{"lora":[null,1,"a",{}]}`, `{"hiresFix":{"model":null}}`, `{"positivePrompt":"\ud800"}`,
		`{"inputs":{"referenceImages":[{"a":1}]}}`, `{"acceleratorOptions":{"cacheEndStep":1e20}}`,
		`{"positivePrompt":"ab","duration":1e-400,"steps":20}`, `{"controlNet":[{"guideImage":"https://a"}]}`,
		"{\"a\":1}\x00", `{"idempotency_key":{}}`,
	} {
		f.Add([]byte(s))
	}
	c, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range c.Models() {
			in, _, err := m.Validate(b, afterEnforcement, fixedSeed)
			if err != nil {
				var ie *InvalidError
				var np *NotPricedError
				if !errors.As(err, &ie) && !errors.As(err, &np) {
					t.Fatalf("%s: unexpected error %T %v", m.Slug, err, err)
				}
				if ie != nil && len(ie.Violations) == 0 {
					t.Fatalf("%s: empty violations", m.Slug)
				}
			} else {
				var obj map[string]any
				if json.Unmarshal(in.JSON, &obj) != nil {
					t.Fatalf("%s: filled input is not an object: %s", m.Slug, in.JSON)
				}
				if _, err := m.Quote(in); err != nil {
					var np *NotPricedError
					if !errors.As(err, &np) {
						t.Fatalf("%s: quote: %v", m.Slug, err)
					}
				}
			}
			if _, _, err := m.Validate(b, beforeEnforcement, fixedSeed); err != nil {
				var ie *InvalidError
				var np *NotPricedError
				if !errors.As(err, &ie) && !errors.As(err, &np) {
					t.Fatalf("%s: unexpected error %v", m.Slug, err)
				}
			}
		}
	})
}
