package catalog

import (
	"encoding/json"
	"math/big"
	"regexp"
)

// ftype is the JSON type of one input field as the contract describes it.
type ftype int

const (
	tObject ftype = iota
	tString
	tInteger
	tNumber
	tBoolean
	tArray
	tURL          // string holding an http(s) URL
	tTrueOrObject // the literal true, or an object (hiresFix)
)

// urlPattern is the whole check a url field gets: an http or https URL with a host. Whether
// the host may be fetched (SSRF rules) is the fetcher's business, not the contract's.
const urlPattern = `^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#@]+([/?#]\S*)?$`

const urlMaxLen = 2048

var urlRE = regexp.MustCompile(urlPattern)

// field is the one Go description of an input field. The JSON Schema (and so the OpenAPI
// documents) and the validator are both derived from it.
type field struct {
	name     string
	typ      ftype
	required bool
	desc     string

	def        any  // default filled into the input when the field is omitted
	randomSeed bool // default is a random seed (unsigned 32-bit, masked to max)
	// defaultWith names a top-level path: the default is filled only when it is sent.
	defaultWith string
	// defaultUnless names a top-level path: the default is not filled when it is sent.
	defaultUnless string
	fillAlways    bool // object: created (with its defaults) even when omitted
	forceTrue     bool // boolean: a sent false is read as true

	min, max       *big.Rat // inclusive numeric bounds
	minS, maxS     string   // the same bounds as written
	minLen, maxLen int      // string length in characters; 0 = unbounded
	pattern        string
	re             *regexp.Regexp
	enum           []any // allowed values: strings or int64
	minItems       int   // arrays; 0 = unbounded
	maxItems       int
	items          *field
	fields         []*field
}

func newField(name string, t ftype) *field { return &field{name: name, typ: t} }

func str(name string) *field     { return newField(name, tString) }
func integer(name string) *field { return newField(name, tInteger) }
func number(name string) *field  { return newField(name, tNumber) }
func boolean(name string) *field { return newField(name, tBoolean) }
func urlField(name string) *field {
	f := newField(name, tURL)
	f.maxLen = urlMaxLen
	return f
}
func object(name string, fields ...*field) *field {
	f := newField(name, tObject)
	f.fields = fields
	return f
}
func array(name string, items *field) *field {
	f := newField(name, tArray)
	f.items = items
	return f
}

func (f *field) req() *field             { f.required = true; return f }
func (f *field) doc(s string) *field     { f.desc = s; return f }
func (f *field) dflt(v any) *field       { f.def = v; return f }
func (f *field) with(path string) *field { f.defaultWith = path; return f }
func (f *field) unless(path string) *field {
	f.defaultUnless = path
	return f
}
func (f *field) always() *field { f.fillAlways = true; return f }
func (f *field) length(lo, hi int) *field {
	f.minLen, f.maxLen = lo, hi
	return f
}
func (f *field) count(lo, hi int) *field {
	f.minItems, f.maxItems = lo, hi
	return f
}
func (f *field) match(p string) *field {
	f.pattern = p
	f.re = regexp.MustCompile(p)
	return f
}
func (f *field) oneOf(vs ...any) *field { f.enum = vs; return f }
func (f *field) strings(vs []string) *field {
	f.enum = make([]any, len(vs))
	for i, v := range vs {
		f.enum[i] = v
	}
	return f
}

// between sets inclusive bounds; "" leaves a side open.
func (f *field) between(lo, hi string) *field {
	if lo != "" {
		f.min, f.minS = mustRat(lo), lo
	}
	if hi != "" {
		f.max, f.maxS = mustRat(hi), hi
	}
	return f
}

func mustRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("catalog: bad bound " + s)
	}
	return r
}

// child returns the sub-field called name, or nil.
func (f *field) child(name string) *field {
	for _, c := range f.fields {
		if c.name == name {
			return c
		}
	}
	return nil
}

// schema renders the field as a JSON Schema (draft 2020-12) object.
func (f *field) schema() map[string]any {
	s := map[string]any{}
	if f.desc != "" {
		s["description"] = f.desc
	}
	switch f.typ {
	case tObject:
		s["type"] = "object"
		props := map[string]any{}
		var req []string
		for _, c := range f.fields {
			props[c.name] = c.schema()
			if c.required {
				req = append(req, c.name)
			}
		}
		s["properties"] = props
		if len(req) > 0 {
			s["required"] = req
		}
		s["additionalProperties"] = false
	case tString:
		s["type"] = "string"
	case tURL:
		s["type"] = "string"
		s["format"] = "uri"
		s["pattern"] = urlPattern
	case tInteger:
		s["type"] = "integer"
	case tNumber:
		s["type"] = "number"
	case tBoolean:
		s["type"] = "boolean"
	case tArray:
		s["type"] = "array"
		s["items"] = f.items.schema()
		if f.minItems > 0 {
			s["minItems"] = f.minItems
		}
		if f.maxItems > 0 {
			s["maxItems"] = f.maxItems
		}
	case tTrueOrObject:
		obj := object("", f.fields...).schema()
		delete(obj, "description")
		s["oneOf"] = []any{map[string]any{"const": true}, obj}
	}
	if f.minLen > 0 {
		s["minLength"] = f.minLen
	}
	if f.maxLen > 0 {
		s["maxLength"] = f.maxLen
	}
	if f.pattern != "" {
		s["pattern"] = f.pattern
	}
	if f.min != nil {
		s["minimum"] = json.Number(f.minS)
	}
	if f.max != nil {
		s["maximum"] = json.Number(f.maxS)
	}
	if len(f.enum) > 0 {
		s["enum"] = f.enum
	}
	if f.def != nil {
		s["default"] = f.def
	}
	if f.forceTrue {
		s["description"] = joinDesc(f.desc, "Always on: a sent false is read as true.")
	}
	if f.randomSeed {
		s["description"] = joinDesc(f.desc, "When omitted a random seed in the unsigned 32-bit range is generated.")
	}
	return s
}

func joinDesc(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}
