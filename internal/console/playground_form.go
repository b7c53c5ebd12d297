package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// The playground's form is generated from the model's input contract (the schema the OpenAPI
// document publishes): a number is a number input with the contract's bounds, an enumeration a
// choice, a boolean a tick box, a list of strings a box with one item a line, and an object the
// fields of its members. Only what the contract leaves open (lists of objects, unions) is a
// JSON box. The prompt comes first, the size and the usual settings next, and the rest is
// folded under "Advanced options".

// formField is one input of the generated form.
type formField struct {
	Name        string   // the member's path, dotted: "acceleratorOptions.cacheEndStep"
	Path        []string // the same, as the body's keys
	Label       string   // for a person: "Prompt", "Accelerator options: cache end step"
	Kind        string   // text, textarea, url, number, select, checkbox, lines or json
	Value       string
	Description string
	Required    bool
	Advanced    bool // folded under "Advanced options"
	Pair        bool // drawn beside its partner (width beside height)
	Options     []string
	Min, Max    string
	Step        string
	Default     string
	// Problem is what is wrong with the value sent, said beside the field ("" when nothing).
	Problem string
}

// fieldLabels names the members whose names do not read well split into words.
var fieldLabels = map[string]string{
	"positivePrompt":  "Prompt",
	"negativePrompt":  "Negative prompt",
	"CFGScale":        "Guidance scale (CFG)",
	"trueCFGScale":    "True guidance scale",
	"referenceImages": "Reference images",
	"upscaleFactor":   "Upscale factor",
	"hiresFix":        "High-resolution fix",
	"pulid":           "PuLID",
	"lora":            "LoRA",
	"ipAdapters":      "IP adapters",
	"controlNet":      "ControlNet",
}

// mainFields are shown unfolded, in this order, when a model has them; required members are
// always shown.
var mainFields = []string{"positivePrompt", "width", "height", "duration", "upscaleFactor", "strength", "steps", "seed",
	"negativePrompt", "outputFormat"}

// schemaFields turns an input schema into the form's fields, in the order a person fills them.
func schemaFields(s map[string]any) []formField {
	out := fieldsOf(s, nil, nil)
	rank := func(f formField) int {
		switch i := slices.Index(mainFields, f.Path[0]); {
		case i == 0:
			return 0
		case f.Required:
			return 1
		case i > 0:
			return 1 + i
		}
		return 1 + len(mainFields)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank(out[i]), rank(out[j]); ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	for i := range out {
		top := out[i].Path[0]
		out[i].Advanced = !out[i].Required && !slices.Contains(mainFields, top)
		out[i].Pair = (out[i].Name == "width" || out[i].Name == "height") && hasField(out, "width") && hasField(out, "height")
	}
	return out
}

func hasField(fs []formField, name string) bool {
	return slices.ContainsFunc(fs, func(f formField) bool { return f.Name == name })
}

// fieldsOf lists the fields of an object schema at path; labels carry the parents' names.
func fieldsOf(s map[string]any, path, parents []string) []formField {
	props, _ := s["properties"].(map[string]any)
	required := stringList(s["required"])
	var out []formField
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		if p == nil || (len(path) == 0 && name == "idempotency_key") {
			continue
		}
		at := append(slices.Clone(path), name)
		label := append(slices.Clone(parents), labelOf(name))
		req := slices.Contains(required, name) // within an optional object, only once it is sent
		if _, ok := p["properties"].(map[string]any); ok && p["type"] == "object" {
			sub := fieldsOf(p, at, label)
			for i := range sub {
				sub[i].Required = sub[i].Required && req
			}
			out = append(out, sub...)
			continue
		}
		out = append(out, fieldOf(p, at, label, req))
	}
	return out
}

func fieldOf(p map[string]any, path, label []string, required bool) formField {
	f := formField{Name: strings.Join(path, "."), Path: path, Required: required, Label: joinLabel(label)}
	f.Description, _ = p["description"].(string)
	// A default is shown, not filled in: an empty field is not sent and the contract's default
	// applies, as for an API call that omits it (some defaults may not be sent alongside
	// other fields).
	if def, ok := p["default"]; ok {
		f.Default = scalarText(def)
	}
	typ, _ := p["type"].(string)
	name := path[len(path)-1]
	switch enum, isEnum := p["enum"].([]any); {
	case isEnum:
		f.Kind = "select"
		for _, e := range enum {
			f.Options = append(f.Options, scalarText(e))
		}
	case typ == "boolean":
		f.Kind = "checkbox"
	case typ == "integer" || typ == "number":
		f.Kind, f.Step = "number", "any"
		if typ == "integer" {
			f.Step = "1"
		}
		f.Min, f.Max = scalarText(p["minimum"]), scalarText(p["maximum"])
	case typ == "string" && p["format"] == "uri":
		f.Kind = "url"
	case typ == "string" && strings.Contains(strings.ToLower(name), "prompt"):
		f.Kind = "textarea"
	case typ == "string":
		f.Kind = "text"
	case typ == "array" && itemType(p) == "string":
		f.Kind = "lines"
	default:
		f.Kind = "json"
		if f.Default != "" {
			f.Default = string(mustJSON(p["default"]))
		}
	}
	return f
}

func itemType(p map[string]any) string {
	items, _ := p["items"].(map[string]any)
	t, _ := items["type"].(string)
	return t
}

func stringList(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// labelOf names a member for a person: from fieldLabels, or its camelCase split into words.
func labelOf(name string) string {
	if l, ok := fieldLabels[name]; ok {
		return l
	}
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			b.WriteByte(' ')
		}
		if i == 0 {
			b.WriteRune(unicode.ToUpper(r))
		} else if unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]) {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// joinLabel writes a nested field's label: "Accelerator options: cache end step".
func joinLabel(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	last := parts[len(parts)-1]
	if len(last) > 1 && unicode.IsLower(rune(last[1])) {
		last = strings.ToLower(last[:1]) + last[1:]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + ": " + last
}

func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// fieldByName finds the field a violation's location names ("body", then the path).
func fieldByPath(fields []formField, loc []string) (formField, bool) {
	if len(loc) > 0 && loc[0] == "body" {
		loc = loc[1:]
	}
	for len(loc) > 0 {
		name := strings.Join(loc, ".")
		for _, f := range fields {
			if f.Name == name {
				return f, true
			}
		}
		loc = loc[:len(loc)-1]
	}
	return formField{}, false
}

// violationText says a violation of the contract for a person: "Prompt is required", or the
// field's label and what is wrong with it.
// markProblem says text beside the field loc names, when it names one of fields.
func markProblem(fields []formField, loc []string, text string) {
	f, ok := fieldByPath(fields, loc)
	if !ok {
		return
	}
	for i := range fields {
		if fields[i].Name == f.Name && fields[i].Problem == "" {
			fields[i].Problem = text
		}
	}
}

func violationText(fields []formField, loc []string, msg string) string {
	f, ok := fieldByPath(fields, loc)
	name := strings.Join(slices.DeleteFunc(slices.Clone(loc), func(s string) bool { return s == "body" }), ".")
	if ok {
		name = f.Label
	}
	if name == "" {
		return sentenceCase(msg)
	}
	switch strings.ToLower(msg) {
	case "field required", "required", "missing":
		return name + " is required."
	}
	return name + ": " + msg + "."
}

// formBody builds the request body from the form's values (form nil: the fields' own values)
// and keeps them on fields for the page that answers. An empty value is a member not sent, so
// the contract's default applies, as it would to an API call that omits it; a tick box is sent
// only when it differs from its default.
func formBody(fields []formField, form map[string][]string) ([]byte, []string) {
	body := map[string]any{}
	var problems []string
	for i := range fields {
		f := &fields[i]
		if form != nil {
			f.Value = ""
			if vals := form[fieldPrefix+f.Name]; len(vals) > 0 {
				f.Value = vals[len(vals)-1] // a tick box follows its hidden "off" value
			}
		}
		val, ok, problem := fieldValue(f)
		if problem != "" {
			problems = append(problems, problem)
			f.Problem = problem
		}
		if ok {
			setPath(body, f.Path, val)
		}
	}
	b, _ := json.Marshal(body)
	return b, problems
}

// fieldValue reads one field: its JSON value, whether it is sent, or what is wrong with it.
func fieldValue(f *formField) (any, bool, string) {
	val := strings.TrimSpace(f.Value)
	switch {
	case f.Kind == "checkbox":
		on := val == "true"
		return on, (f.Default == "true") != on, ""
	case val == "":
		return nil, false, ""
	case f.Kind == "json":
		if !json.Valid([]byte(val)) {
			return nil, false, f.Label + " is not valid JSON."
		}
		return json.RawMessage(val), true, ""
	case f.Kind == "lines":
		var items []string
		for _, l := range strings.Split(val, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				items = append(items, l)
			}
		}
		return items, true, ""
	case f.Kind == "number" || (f.Kind == "select" && isNumberEnum(f.Options)):
		if _, err := strconv.ParseFloat(val, 64); err != nil {
			return nil, false, f.Label + " is a number."
		}
		return json.Number(val), true, ""
	}
	return f.Value, true, ""
}

// setPath sets body[path...] = v, making the objects on the way.
func setPath(body map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := body[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			body[k] = next
		}
		body = next
	}
	body[path[len(path)-1]] = v
}

func isNumberEnum(opts []string) bool {
	for _, o := range opts {
		if _, err := strconv.ParseFloat(o, 64); err != nil {
			return false
		}
	}
	return len(opts) > 0
}
