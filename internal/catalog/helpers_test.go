package catalog

import (
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	beforeEnforcement = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	afterEnforcement  = time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)
	fixedSeed         = func() uint32 { return 123456789 }
)

// baseBodies are the smallest valid request per model.
var baseBodies = map[string]string{
	"image-9b-kv": `{"positivePrompt":"a cat"}`,
	"image-4b":    `{"positivePrompt":"a cat"}`,
	"image-lite":  `{"positivePrompt":"a cat"}`,
	"upscale":     `{"inputs":{"image":"https://x.example/a.png"}}`,
	"music-turbo": `{"positivePrompt":"a song"}`,
	"eye-mask":    `{"inputs":{"image":"https://x.example/a.png"}}`,
	"image-edit":  `{"positivePrompt":"a cat","inputs":{"referenceImages":["https://x.example/a.png"]}}`,
	"image-dev":   `{"positivePrompt":"a cat"}`,
	"image-turbo": `{"positivePrompt":"a cat"}`,
}

func mustDefault(t testing.TB) *Catalog {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustModel(t testing.TB, c *Catalog, slug string) *Model {
	t.Helper()
	m, ok := c.Model(slug)
	if !ok {
		t.Fatalf("no model %s", slug)
	}
	return m
}

func decodeMap(t testing.TB, s string) map[string]any {
	t.Helper()
	v, err := decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v.(map[string]any)
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// merged returns the base body of slug with the fields of patch (a JSON object) set on top.
func merged(t testing.TB, slug, patch string) []byte {
	t.Helper()
	b := decodeMap(t, baseBodies[slug])
	for k, v := range decodeMap(t, patch) {
		b[k] = v
	}
	return encode(t, b)
}

func violations(err error) []Violation {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Violations
	}
	return nil
}

func hasViolation(err error, loc, typ string) bool {
	for _, v := range violations(err) {
		if strings.Join(v.Loc, ".") == loc && (typ == "" || v.Type == typ) {
			return true
		}
	}
	return false
}

// sample is a valid value for a field (required children included).
func sample(f *field) any {
	switch {
	case len(f.enum) > 0:
		return f.enum[0]
	case f.typ == tURL:
		return "https://x.example/a.png"
	case f.typ == tString && f.pattern == hexColour:
		return "#ffffff"
	case f.typ == tString && f.pattern == keyScale:
		return "C major"
	case f.typ == tString:
		return strings.Repeat("a", max(f.minLen, 1))
	case f.typ == tInteger || f.typ == tNumber:
		if f.min != nil {
			return json.Number(f.min.RatString())
		}
		return json.Number("1")
	case f.typ == tBoolean, f.typ == tTrueOrObject:
		return true
	case f.typ == tObject:
		o := map[string]any{}
		for _, c := range f.fields {
			if c.required {
				o[c.name] = sample(c)
			}
		}
		return o
	case f.typ == tArray:
		var a []any
		for range max(f.minItems, 1) {
			a = append(a, sample(f.items))
		}
		return a
	}
	return nil
}

// setAt sets v at the end of chain (fields from the root's child down; array items are
// chain elements too), creating parents with their required fields. It returns the loc.
func setAt(body map[string]any, chain []*field, v any) []string {
	loc := []string{"body"}
	var cur any = body
	for i, f := range chain {
		last := i == len(chain)-1
		switch container := cur.(type) {
		case map[string]any:
			loc = append(loc, f.name)
			if last {
				container[f.name] = v
				return loc
			}
			next, ok := container[f.name]
			if !ok || (f.typ == tTrueOrObject && next == true) {
				next = sample(f)
				if f.typ == tTrueOrObject {
					next = sample(object("", f.fields...))
				}
				container[f.name] = next
			}
			cur = next
		case []any:
			loc = append(loc, "0")
			if last {
				container[0] = v
				return loc
			}
			cur = container[0]
		}
	}
	return loc
}

// leaf visits every field under root with its chain.
func leaves(root *field, chain []*field, visit func(chain []*field)) {
	kids := root.fields
	if root.typ == tArray {
		kids = []*field{root.items}
	}
	for _, c := range kids {
		ch := append(slices.Clone(chain), c)
		visit(ch)
		if c.typ == tObject || c.typ == tArray || c.typ == tTrueOrObject {
			leaves(c, ch, visit)
		}
	}
}

func step(f *field) *big.Rat {
	if f.typ == tInteger {
		return big.NewRat(1, 1)
	}
	return big.NewRat(1, 1000)
}

func ratJSON(r *big.Rat) json.Number {
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	return json.Number(r.FloatString(6))
}
