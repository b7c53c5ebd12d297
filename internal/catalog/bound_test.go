package catalog

import (
	"errors"
	"strings"
	"testing"
)

// TestIN_SHARED06_BoundsBeforeDecoding: a body within its known fields but over a bound on
// values or depth is refused with one violation naming the bound, before it is decoded; a
// body at the bounds is judged by its contract as usual.
func TestIN_SHARED06_BoundsBeforeDecoding(t *testing.T) {
	m := mustModel(t, mustDefault(t), "image-edit")
	refs := func(elems string) string {
		return `{"positivePrompt":"a cat","inputs":{"referenceImages":` + elems + `}}`
	}
	for _, c := range []struct{ name, body, says string }{
		{"values", refs("[" + strings.Repeat(`"",`, MaxValues) + `""]`), "values; no model input holds more than 10000"},
		{"depth", refs(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)), "nests 34 levels deep; no model input nests more than 32"},
		{"members", refs("[" + strings.Repeat(`{"a":0},`, MaxMembers) + `{}]`), "fields; no model input holds more than 10000"},
	} {
		_, _, err := m.Validate([]byte(c.body), afterEnforcement, fixedSeed)
		var inv *InvalidError
		if !errors.As(err, &inv) || len(inv.Violations) != 1 {
			t.Fatalf("%s: %v", c.name, err)
		}
		v := inv.Violations[0]
		if v.Type != TypeTooLong || !strings.Contains(v.Msg, c.says) {
			t.Errorf("%s: %+v, want a %s violation saying %q", c.name, v, TypeTooLong, c.says)
		}
	}
	// At the bounds the contract judges: the elements are not URLs.
	_, _, err := m.Validate([]byte(refs("["+strings.Repeat(`"",`, 100)+`""]`)), afterEnforcement, fixedSeed)
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Violations[0].Type == TypeTooLong && strings.Contains(inv.Violations[0].Msg, "values") {
		t.Fatalf("a small body was refused by the bounds: %v", err)
	}
}
