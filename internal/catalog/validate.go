package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelexec/modelexec/internal/jsonscan"
)

// Violation names one refused field in the queue-protocol detail shape. Loc starts with
// "body"; array indexes are written as decimal strings (["body","lora","0","model"]), the
// same []string shape as runners.Violation.
type Violation struct {
	Loc  []string `json:"loc"`
	Msg  string   `json:"msg"`
	Type string   `json:"type"`
}

// Violation types.
const (
	TypeJSONInvalid    = "json_invalid"
	TypeMissing        = "missing"
	TypeExtraForbidden = "extra_forbidden"
	TypeObject         = "dict_type"
	TypeArray          = "list_type"
	TypeString         = "string_type"
	TypeInteger        = "int_type"
	TypeIntFromFloat   = "int_from_float"
	TypeNumber         = "float_type"
	TypeBool           = "bool_type"
	TypeTrueOrObject   = "true_or_object_type"
	TypeURL            = "url_type"
	TypeGreaterEqual   = "greater_than_equal"
	TypeLessEqual      = "less_than_equal"
	TypeStringShort    = "string_too_short"
	TypeStringLong     = "string_too_long"
	TypeTooShort       = "too_short"
	TypeTooLong        = "too_long"
	TypeEnum           = "enum"
	TypePattern        = "string_pattern_mismatch"
	TypeCrossField     = "cross_field"
)

// MaxViolations is the most violations a refusal lists. A body can name any number of unknown
// or wrong fields (a 1 MiB body holds ~131,000 one-letter keys); listing each would make the
// refusal many times larger than the request and cost the server memory per field. Validation
// stops collecting at the cap and only counts the rest (Omitted).
const MaxViolations = 50

// InvalidError is a refused input: 422 with detail on the queue hosts. Violations holds at most
// MaxViolations entries; Omitted counts those found beyond them.
type InvalidError struct {
	Violations []Violation
	Omitted    int
}

func (e *InvalidError) Error() string {
	if len(e.Violations) == 0 {
		return "invalid input"
	}
	v := e.Violations[0]
	return fmt.Sprintf("invalid input: %s: %s", strings.Join(v.Loc, "."), v.Msg)
}

// Warning is a cross-field rule broken before its enforcement date: the request is accepted
// and answered with a Deprecation signal and this warning.
type Warning struct {
	Rule string   `json:"rule"`
	Loc  []string `json:"loc"`
	Msg  string   `json:"msg"`
}

// Input is a validated input with its defaults filled in.
type Input struct {
	// JSON is the filled input the runner receives: defaults applied, seed always present
	// (on models that take one), safety.checkContent forced on, idempotency_key removed,
	// integers in canonical form.
	JSON json.RawMessage
	// Seed is the seed the run uses (sent or generated); HasSeed is false on models without one.
	Seed    int64
	HasSeed bool
	tree    map[string]any
}

// decode parses one JSON value with exact numbers, refusing trailing data.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// Validate checks raw (the JSON object sent to the model) against the model's input
// contract at time now. rnd draws the random seed of a request that sends none (nil uses a
// process-wide source).
//
// Order: structural checks (types, ranges, enums, unknown fields) → *InvalidError; a request
// the model cannot price before any rule is judged (M5 inputs.audio) → *NotPricedError;
// cross-field rules → warnings before the enforcement date, *InvalidError (type cross_field)
// from it on. It never panics, whatever the bytes.
func (m *Model) Validate(raw []byte, now time.Time, rnd func() uint32) (Input, []Warning, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}") // no body is an empty input, as on every JSON route: the answer names what it lacks
	}
	if m.lang != nil {
		in, err := m.validateLanguage(raw)
		return in, nil, err
	}
	c := m.contract
	if why := oversized(jsonscan.Measure(raw)); why != "" && json.Valid(raw) && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return Input{}, nil, c.tooLarge(raw, why)
	}
	sentV, err := decode(raw)
	if err != nil {
		return Input{}, nil, &InvalidError{Violations: []Violation{{Loc: body(), Msg: "Body is not valid JSON: " + err.Error(), Type: TypeJSONInvalid}}}
	}
	sent, ok := sentV.(map[string]any)
	if !ok {
		return Input{}, nil, &InvalidError{Violations: []Violation{{Loc: body(), Msg: "Input should be a JSON object", Type: TypeObject}}}
	}
	var vs violationList
	checkObject(c.root, sent, body(), true, &vs)
	if len(vs.list) > 0 {
		return Input{}, nil, &InvalidError{Violations: vs.list, Omitted: vs.omitted}
	}
	if c.unpriced != nil {
		if msg := c.unpriced(sent); msg != "" {
			return Input{}, nil, &NotPricedError{Message: msg}
		}
	}
	filledV, _ := decode(raw)
	filled := filledV.(map[string]any)
	delete(filled, idempotencyKey)
	if rnd == nil {
		rnd = rand.Uint32
	}
	fillObject(c.root, filled, sent, rnd)

	var warns []Warning
	for _, r := range c.rules {
		for _, h := range r.check(sent, filled) {
			warns = append(warns, Warning{Rule: r.id, Loc: h.loc, Msg: h.msg})
		}
	}
	if len(warns) > 0 && !now.Before(m.enforceFrom) {
		for _, w := range warns {
			vs.add(Violation{Loc: w.Loc, Msg: w.Msg, Type: TypeCrossField})
		}
		return Input{}, nil, &InvalidError{Violations: vs.list, Omitted: vs.omitted}
	}
	out, err := json.Marshal(filled)
	if err != nil {
		return Input{}, nil, fmt.Errorf("catalog: encode filled input: %w", err)
	}
	in := Input{JSON: out, tree: filled}
	for _, p := range [][]string{{"seed"}, {"settings", "seed"}} {
		if s, ok := intAt(filled, p...); ok {
			in.Seed, in.HasSeed = s, true
			break
		}
	}
	return in, warns, nil
}

// violationList collects up to MaxViolations entries and counts the rest without building them.
type violationList struct {
	list    []Violation
	omitted int
}

func (vs *violationList) full() bool { return len(vs.list) >= MaxViolations }

func (vs *violationList) add(v Violation) {
	if vs.full() {
		vs.omitted++
		return
	}
	vs.list = append(vs.list, v)
}

func add(vs *violationList, loc []string, typ, format string, args ...any) {
	if vs.full() {
		vs.omitted++ // no message, no copy of loc: a refusal's memory stays bounded
		return
	}
	vs.list = append(vs.list, Violation{Loc: slices.Clone(loc), Msg: fmt.Sprintf(format, args...), Type: typ})
}

func checkObject(f *field, obj map[string]any, loc []string, top bool, vs *violationList) {
	for _, c := range f.fields {
		v, ok := obj[c.name]
		if !ok {
			if c.required {
				add(vs, append(loc, c.name), TypeMissing, "Field required")
			}
			continue
		}
		checkValue(c, v, append(loc, c.name), vs)
	}
	var extra []string
	for k := range obj {
		if f.child(k) == nil && !(top && k == idempotencyKey) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for i, k := range extra {
		if vs.full() {
			vs.omitted += len(extra) - i // counted, not built
			break
		}
		add(vs, append(loc, k), TypeExtraForbidden, "Extra inputs are not permitted")
	}
}

func checkValue(f *field, v any, loc []string, vs *violationList) {
	switch f.typ {
	case tObject:
		o, ok := v.(map[string]any)
		if !ok {
			add(vs, loc, TypeObject, "Input should be an object")
			return
		}
		checkObject(f, o, loc, false, vs)
	case tTrueOrObject:
		if b, ok := v.(bool); ok && b {
			return
		}
		o, ok := v.(map[string]any)
		if !ok {
			add(vs, loc, TypeTrueOrObject, "Input should be true or an object")
			return
		}
		checkObject(f, o, loc, false, vs)
	case tArray:
		a, ok := v.([]any)
		if !ok {
			add(vs, loc, TypeArray, "Input should be an array")
			return
		}
		if f.minItems > 0 && len(a) < f.minItems {
			add(vs, loc, TypeTooShort, "Array should have at least %d item(s), not %d", f.minItems, len(a))
		}
		if f.maxItems > 0 && len(a) > f.maxItems {
			add(vs, loc, TypeTooLong, "Array should have at most %d item(s), not %d", f.maxItems, len(a))
		}
		for i, it := range a {
			checkValue(f.items, it, append(loc, strconv.Itoa(i)), vs)
		}
	case tString, tURL:
		s, ok := v.(string)
		if !ok {
			add(vs, loc, TypeString, "Input should be a string")
			return
		}
		n := utf8.RuneCountInString(s)
		if f.minLen > 0 && n < f.minLen {
			add(vs, loc, TypeStringShort, "String should have at least %d characters", f.minLen)
		}
		if f.maxLen > 0 && n > f.maxLen {
			add(vs, loc, TypeStringLong, "String should have at most %d characters", f.maxLen)
		}
		if f.typ == tURL && !urlRE.MatchString(s) {
			add(vs, loc, TypeURL, "Input should be an http or https URL")
		}
		if f.re != nil && !f.re.MatchString(s) {
			add(vs, loc, TypePattern, "String should match pattern %q", f.pattern)
		}
		if len(f.enum) > 0 && !slices.Contains(f.enum, any(s)) {
			add(vs, loc, TypeEnum, "Input should be one of %s", enumList(f.enum))
		}
	case tInteger, tNumber:
		n, ok := v.(json.Number)
		if !ok {
			if f.typ == tInteger {
				add(vs, loc, TypeInteger, "Input should be an integer")
			} else {
				add(vs, loc, TypeNumber, "Input should be a number")
			}
			return
		}
		r := parseNumber(n)
		if f.typ == tInteger && !r.IsInt() {
			add(vs, loc, TypeIntFromFloat, "Input should be an integer")
			return
		}
		if f.min != nil && r.Cmp(f.min) < 0 {
			add(vs, loc, TypeGreaterEqual, "Input should be greater than or equal to %s", f.minS)
		}
		if f.max != nil && r.Cmp(f.max) > 0 {
			add(vs, loc, TypeLessEqual, "Input should be less than or equal to %s", f.maxS)
		}
		if f.typ == tInteger && !r.Num().IsInt64() {
			// An integer the contract leaves unbounded (outpaint's extents, "0 or more") is
			// still one the model can take: a 64-bit integer.
			if r.Sign() > 0 && f.max == nil {
				add(vs, loc, TypeLessEqual, "Input should be less than or equal to %d", int64(math.MaxInt64))
			} else if r.Sign() < 0 && f.min == nil {
				add(vs, loc, TypeGreaterEqual, "Input should be greater than or equal to %d", int64(math.MinInt64))
			}
		}
		if len(f.enum) > 0 && !(r.IsInt() && r.Num().IsInt64() && slices.Contains(f.enum, any(r.Num().Int64()))) {
			add(vs, loc, TypeEnum, "Input should be one of %s", enumList(f.enum))
		}
	case tBoolean:
		if _, ok := v.(bool); !ok {
			add(vs, loc, TypeBool, "Input should be a boolean")
		}
	}
}

func enumList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		if s, ok := v.(string); ok {
			parts[i] = "'" + s + "'"
		} else {
			parts[i] = fmt.Sprint(v)
		}
	}
	if len(parts) > 12 {
		return strings.Join(parts[:12], ", ") + fmt.Sprintf(" (and %d more)", len(parts)-12)
	}
	return strings.Join(parts, ", ")
}

// maxExp bounds the decimal exponent evaluated exactly: every bound of every contract is far
// inside 10^±maxExp, so a larger exponent is clamped without changing any comparison.
const maxExp = 1000

// parseNumber reads a JSON number exactly. The decoder has already checked its syntax.
func parseNumber(n json.Number) *big.Rat {
	s := string(n)
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil { // beyond int64: clamp by sign
			e = maxExp + 1
			if strings.HasPrefix(s[i+1:], "-") {
				e = -maxExp - 1
			}
		}
		exp = e
	}
	r, ok := new(big.Rat).SetString(mant)
	if !ok {
		return new(big.Rat)
	}
	if r.Sign() == 0 || exp == 0 {
		return r
	}
	if exp > maxExp {
		exp = maxExp
	} else if exp < -maxExp {
		exp = -maxExp
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(exp)), nil)
	if exp > 0 {
		return r.Mul(r, new(big.Rat).SetInt(p))
	}
	return r.Quo(r, new(big.Rat).SetInt(p))
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func ratOf(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	return parseNumber(n), true
}

// jsonValue turns a default into the decoded-tree form (json.Number for numbers).
func jsonValue(v any) any {
	switch x := v.(type) {
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'f', -1, 64))
	}
	return v
}

// fillObject fills the defaults of f's fields into obj (already validated). sent is the
// whole input as sent, for defaults that depend on another field.
func fillObject(f *field, obj map[string]any, sent map[string]any, rnd func() uint32) {
	for _, c := range f.fields {
		v, ok := obj[c.name]
		if ok {
			obj[c.name] = fillValue(c, v, sent, rnd)
			continue
		}
		switch {
		case c.randomSeed:
			seed := uint64(rnd())
			if c.max != nil && c.max.IsInt() && c.max.Num().IsUint64() && c.max.Num().Uint64() < 1<<32-1 {
				seed %= c.max.Num().Uint64() + 1
			}
			obj[c.name] = json.Number(strconv.FormatUint(seed, 10))
		case c.def != nil:
			if c.defaultWith != "" && !has(sent, strings.Split(c.defaultWith, ".")...) {
				continue
			}
			if c.defaultUnless != "" && has(sent, strings.Split(c.defaultUnless, ".")...) {
				continue
			}
			obj[c.name] = jsonValue(c.def)
		case c.typ == tObject && c.fillAlways:
			o := map[string]any{}
			fillObject(c, o, sent, rnd)
			obj[c.name] = o
		}
	}
	// negativePrompt is ignored when guidance is disabled (CFGScale of 1 or less).
	if f.child("CFGScale") != nil && f.child("negativePrompt") != nil {
		if cfg, ok := ratAt(obj, "CFGScale"); ok && cfg.Cmp(big.NewRat(1, 1)) <= 0 {
			delete(obj, "negativePrompt")
		}
	}
}

func fillValue(f *field, v any, sent map[string]any, rnd func() uint32) any {
	switch f.typ {
	case tObject, tTrueOrObject:
		if o, ok := v.(map[string]any); ok {
			fillObject(f, o, sent, rnd)
		}
	case tArray:
		if a, ok := v.([]any); ok {
			for i := range a {
				a[i] = fillValue(f.items, a[i], sent, rnd)
			}
		}
	case tInteger:
		if r, ok := ratOf(v); ok && r.IsInt() {
			return json.Number(r.Num().String())
		}
	case tBoolean:
		if f.forceTrue {
			return true
		}
	}
	return v
}
