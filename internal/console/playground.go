package console

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// The playground runs a model from a form generated from its input contract (the schema the
// OpenAPI document publishes), shows the price before anything is charged, and submits through
// the jobs engine exactly as the API does: the same validation, the same charge through the
// ledger, the same refusals. A submission is the account's own, under the account's console
// key (auth.Service.ConsoleKey): a key record like the others, so its charges are counted and
// exported with theirs.

// fieldPrefix names the form fields that are model inputs, apart from the form's own.
const fieldPrefix = "in."

type modelChoice struct {
	Slug, Name, Category, Product string
}

type playgroundData struct {
	Models   []modelChoice
	Model    *catalog.Model
	Fields   []formField
	Advanced int // how many fields are folded
	// AdvancedOpen unfolds "Advanced options" when a folded field has a problem to fix.
	AdvancedOpen bool
	Idem         string
	Quote        quoteAnswer
	Balance      int64
	Violations   []string
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
		body, _ := formBody(d.Fields, nil)
		d.Quote = h.quote(d.Model, d.Fields, body)
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
		for _, f := range d.Fields {
			if f.Advanced {
				d.Advanced++
			}
		}
	}
	return d
}

// quote prices body as a submit would, without charging or storing anything.
func (h *Handler) quote(m *catalog.Model, fields []formField, body []byte) quoteAnswer {
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
		// Only missing fields: the form is not filled in yet. Anything else is a value to fix.
		a := quoteAnswer{Message: "Fill in the form to see the price."}
		for _, v := range inv.Violations {
			text := violationText(fields, v.Loc, v.Msg)
			a.Violations = append(a.Violations, text)
			if !strings.HasSuffix(text, " is required.") {
				a.Message = "A field has a problem to fix (said beside it) before the price can be shown."
			}
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
	body, problems := formBody(fields, r.PostForm)
	if len(problems) > 0 {
		writeJSON(w, http.StatusOK, quoteAnswer{Message: "Some fields are not valid.", Violations: problems})
		return nil
	}
	writeJSON(w, http.StatusOK, h.quote(m, fields, body))
	return nil
}

// playgroundSubmit runs the model. The form carries an idempotency key minted with the page, so
// a form sent twice (a double click, a reload of the answer) is the same request: it answers
// the first job and charges once, and the page it leads to says so (replayed=1).
func (h *Handler) playgroundSubmit(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d := h.playgroundData(r.PostFormValue("model"), v)
	if d.Model == nil {
		return refuse(http.StatusNotFound, "There is no such model: pick one from the list.")
	}
	if idem := r.PostFormValue("idempotency_key"); jobs.ValidIdempotencyKey(idem) {
		d.Idem = idem
	}
	body, problems := formBody(d.Fields, r.PostForm)
	again := func(status int, msg string, violations []string) error {
		d.Quote, d.Violations = h.quote(d.Model, d.Fields, body), violations
		for _, f := range d.Fields {
			d.AdvancedOpen = d.AdvancedOpen || (f.Advanced && f.Problem != "")
		}
		h.render(w, status, "playground", view{Title: "Playground", Nav: "playground", V: v, Data: d, Error: msg})
		return nil
	}
	if refused := standing(v.Account, ratelimit.Generate); refused != nil {
		return again(refused.status, refused.msg, nil)
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
	if err == nil && h.LastUsed != nil {
		h.LastUsed.Note(p.Key.ID, h.Now()) // the keys page's "last used" of the Console key
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
			text := violationText(d.Fields, loc, dv.Msg)
			violations = append(violations, text)
			markProblem(d.Fields, loc, text)
		}
		if len(violations) > 0 {
			msg = "Some fields need attention (listed below); nothing was charged"
		}
		return again(status, sentenceCase(strings.TrimSuffix(msg, "."))+" ("+string(e.Code)+").", violations)
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
	answer := target + "?submitted=1"
	if res.Replayed { // the form's key named an earlier run: it is shown, nothing ran again
		answer += "&replayed=1"
	}
	http.Redirect(w, r, answer, http.StatusSeeOther)
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
