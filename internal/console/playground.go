package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
)

// The playground runs a model from a form generated from its input contract (the schema the
// OpenAPI document publishes), shows the price before anything is charged, and submits through
// the jobs engine exactly as the API does: the same validation, the same charge through the
// ledger, the same refusals. A submission is the account's own, under the account's console
// key (auth.Service.ConsoleKey): a key record like the others, so its charges are counted and
// exported with theirs.

// fieldPrefix names the form fields that are model inputs, apart from the form's own.
const fieldPrefix = "in."

// formField is one input of the generated form.
type formField struct {
	Name, Label, Kind, Value, Description string
	Required                              bool
	Options                               []string
	Min, Max, Step                        string
	Default                               string
}

type modelChoice struct {
	Slug, Name, Category, Product string
}

type playgroundData struct {
	Models     []modelChoice
	Model      *catalog.Model
	Fields     []formField
	Idem       string
	Quote      quoteAnswer
	Balance    int64
	Violations []string
}

// quoteAnswer is the price of the form as it stands, or why it has none yet.
type quoteAnswer struct {
	OK         bool     `json:"ok"`
	Credits    int64    `json:"credits"`
	Units      string   `json:"units,omitempty"`
	Unit       string   `json:"unit,omitempty"`
	Message    string   `json:"message,omitempty"`
	Violations []string `json:"violations,omitempty"`
	// Warnings are cross-field rules the form breaks that are not enforced yet: the run is
	// accepted, and the API would answer them in its warnings list.
	Warnings []string `json:"warnings,omitempty"`
}

func (h *Handler) playground(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d := h.playgroundData(r.URL.Query().Get("model"), v)
	if d.Model != nil {
		body, _ := formBody(d.Model, d.Fields, nil)
		d.Quote = h.quote(d.Model, body)
	}
	h.render(w, http.StatusOK, "playground", view{Title: "Playground", Nav: "playground", V: v, Data: d})
	return nil
}

func (h *Handler) playgroundData(slug string, v *viewer) playgroundData {
	d := playgroundData{Balance: v.Account.Balance, Idem: "console-" + randomToken()[:24]}
	for _, m := range h.Catalog.Models() {
		d.Models = append(d.Models, modelChoice{Slug: m.Slug, Name: m.Name, Category: m.Category, Product: m.Product})
	}
	if m, ok := h.Catalog.Model(slug); ok {
		d.Model = m
		d.Fields = schemaFields(m.InputSchema())
	}
	return d
}

// schemaFields turns the top level of an input schema into form fields: enumerations are
// choices, booleans a yes/no/default choice (an unticked box could not say "the default"),
// numbers and strings their inputs, and objects and arrays a JSON text area. Required fields
// come first, then the rest by name.
func schemaFields(s map[string]any) []formField {
	props, _ := s["properties"].(map[string]any)
	var required []string
	switch req := s["required"].(type) {
	case []string:
		required = req
	case []any:
		for _, x := range req {
			if str, ok := x.(string); ok {
				required = append(required, str)
			}
		}
	}
	var out []formField
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		if p == nil || name == "idempotency_key" {
			continue
		}
		f := formField{Name: name, Label: name, Required: slices.Contains(required, name)}
		f.Description, _ = p["description"].(string)
		typ, _ := p["type"].(string)
		// A default is shown, not filled in: an empty field is not sent and the contract's
		// default applies, as for an API call that omits it (some defaults may not be sent
		// alongside other fields).
		if def, ok := p["default"]; ok {
			f.Default = scalarText(def)
		}
		if enum, ok := p["enum"].([]any); ok {
			f.Kind = "select"
			for _, e := range enum {
				f.Options = append(f.Options, scalarText(e))
			}
		} else {
			switch typ {
			case "boolean":
				f.Kind, f.Options = "select", []string{"true", "false"}
			case "integer", "number":
				f.Kind, f.Step = "number", "any"
				if typ == "integer" {
					f.Step = "1"
				}
				f.Min, f.Max = scalarText(p["minimum"]), scalarText(p["maximum"])
			case "string":
				f.Kind = "text"
				if p["format"] == "uri" {
					f.Kind = "url"
				} else if strings.Contains(strings.ToLower(name), "prompt") {
					f.Kind = "textarea"
				}
			default:
				f.Kind = "json"
				if f.Default != "" {
					f.Default = string(mustJSON(p["default"]))
				}
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
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

// formBody builds the request body from the form's values (form nil: the fields' own values)
// and keeps them on fields for the page that answers. An empty value is a field not sent, so
// the contract's default applies, as it would to an API call that omits it.
func formBody(m *catalog.Model, fields []formField, form map[string][]string) ([]byte, []string) {
	body := map[string]any{}
	var problems []string
	for i := range fields {
		f := &fields[i]
		if form != nil {
			f.Value = ""
			if vals := form[fieldPrefix+f.Name]; len(vals) > 0 {
				f.Value = vals[0]
			}
		}
		val := strings.TrimSpace(f.Value)
		if val == "" {
			continue
		}
		switch {
		case f.Kind == "json":
			if !json.Valid([]byte(val)) {
				problems = append(problems, f.Name+": not valid JSON")
				continue
			}
			body[f.Name] = json.RawMessage(val)
		case f.Kind == "number" || (f.Kind == "select" && isNumberEnum(f.Options)):
			if _, err := strconv.ParseFloat(val, 64); err != nil {
				problems = append(problems, f.Name+": not a number")
				continue
			}
			body[f.Name] = json.Number(val)
		case f.Kind == "select" && slices.Equal(f.Options, []string{"true", "false"}):
			body[f.Name] = val == "true"
		default:
			body[f.Name] = f.Value
		}
	}
	b, _ := json.Marshal(body)
	return b, problems
}

func isNumberEnum(opts []string) bool {
	for _, o := range opts {
		if _, err := strconv.ParseFloat(o, 64); err != nil {
			return false
		}
	}
	return len(opts) > 0
}

// quote prices body as a submit would, without charging or storing anything.
func (h *Handler) quote(m *catalog.Model, body []byte) quoteAnswer {
	in, warns, err := m.Validate(body, h.Now(), rand.Uint32)
	if err == nil {
		var q catalog.Quote
		if q, err = m.Quote(in); err == nil {
			return quoteAnswer{OK: true, Credits: q.Credits, Units: q.UnitsDisplay(), Unit: q.Unit, Warnings: warningTexts(warns)}
		}
	}
	var inv *catalog.InvalidError
	var np *catalog.NotPricedError
	switch {
	case errors.As(err, &inv):
		a := quoteAnswer{Message: "Fill in the form to see the price."}
		for _, v := range inv.Violations {
			a.Violations = append(a.Violations, strings.Join(v.Loc, ".")+": "+v.Msg)
		}
		return a
	case errors.As(err, &np):
		return quoteAnswer{Message: np.Message}
	}
	return quoteAnswer{Message: "This request cannot be priced."}
}

// playgroundQuote answers the price of the form as JSON; the page's script asks it as fields
// change. Being a POST it carries the form's CSRF token like any other.
func (h *Handler) playgroundQuote(w http.ResponseWriter, r *http.Request, v *viewer) error {
	m, ok := h.Catalog.Model(r.PostFormValue("model"))
	if !ok {
		writeJSON(w, http.StatusNotFound, quoteAnswer{Message: "There is no such model."})
		return nil
	}
	fields := schemaFields(m.InputSchema())
	body, problems := formBody(m, fields, r.PostForm)
	if len(problems) > 0 {
		writeJSON(w, http.StatusOK, quoteAnswer{Message: "Some fields are not valid.", Violations: problems})
		return nil
	}
	writeJSON(w, http.StatusOK, h.quote(m, body))
	return nil
}

// playgroundSubmit runs the model. The form carries an idempotency key minted with the page, so
// a form sent twice (a double click, a reload of the answer) is the same request: it answers
// the first job and charges once.
func (h *Handler) playgroundSubmit(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d := h.playgroundData(r.PostFormValue("model"), v)
	if d.Model == nil {
		return refuse(http.StatusNotFound, "There is no such model: pick one from the list.")
	}
	if idem := r.PostFormValue("idempotency_key"); jobs.ValidIdempotencyKey(idem) {
		d.Idem = idem
	}
	body, problems := formBody(d.Model, d.Fields, r.PostForm)
	again := func(status int, msg string, violations []string) error {
		d.Quote, d.Violations = h.quote(d.Model, body), violations
		h.render(w, status, "playground", view{Title: "Playground", Nav: "playground", V: v, Data: d, Error: msg})
		return nil
	}
	if len(problems) > 0 {
		return again(http.StatusUnprocessableEntity, "Some fields are not valid.", problems)
	}
	p, err := h.Auth.ConsolePrincipal(r.Context(), v.Account)
	if err == nil && h.Paused != nil && h.Paused(d.Model.Product) {
		err = apierr.New(apierr.APIDisabled)
	}
	if err == nil {
		err = admit(d.Model)
	}
	var res jobs.SubmitResult
	if err == nil {
		res, err = h.Jobs.Submit(r.Context(), jobs.SubmitRequest{Principal: &p, Model: d.Model, Body: body, IdempotencyKey: d.Idem})
	}
	if e, ok := apierr.As(err); ok {
		status, msg := e.Entry().Status, e.Message
		if e.Status != 0 {
			status = e.Status
		}
		if msg == "" {
			msg = e.Entry().Message
		}
		var violations []string
		for _, dv := range e.Detail {
			loc := make([]string, len(dv.Loc))
			for i, l := range dv.Loc {
				loc[i] = fmt.Sprint(l)
			}
			violations = append(violations, strings.Join(loc, ".")+": "+dv.Msg)
		}
		return again(status, string(e.Code)+": "+msg, violations)
	}
	if err != nil {
		return err
	}
	target := "/console/jobs/" + res.Job.ID
	if len(res.Warnings) > 0 {
		if err := h.reveal(w, v, target, warningTexts(res.Warnings)); err != nil {
			return err
		}
	}
	http.Redirect(w, r, target+"?submitted=1", http.StatusSeeOther)
	return nil
}

// warningTexts says each warning for a person: the rule broken, where, and what follows.
func warningTexts(ws []catalog.Warning) []string {
	var out []string
	for _, w := range ws {
		field := strings.Join(slices.DeleteFunc(slices.Clone(w.Loc), func(s string) bool { return s == "body" }), ".")
		out = append(out, fmt.Sprintf("%s: %s (rule %s). Accepted for now; once the rule is enforced, requests like this are refused.",
			sentenceCase(w.Msg), field, w.Rule))
	}
	return out
}

// sentenceCase starts s with a capital letter.
func sentenceCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// admit refuses a model that is only described (501) or paused (503), before any charge, with
// the codes the model hosts answer.
func admit(m *catalog.Model) error {
	err := m.Admit()
	var se *catalog.StateError
	if errors.As(err, &se) {
		return apierr.Newf(apierr.Code(se.Code), "%s", se.Error())
	}
	return err
}
