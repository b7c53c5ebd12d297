package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestConsolePlaygroundProblemBesideItsField: a value the contract refuses (image-lite's
// guidance scale above 10, sent with the browser's own checks off) is said under its field,
// which is marked invalid and described by it; "Advanced options", where the field is folded,
// opens; and the price box says there is a problem to fix, not that the form is empty.
func TestConsolePlaygroundProblemBesideItsField(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_problem", 1000)
	_, page := p.get("/console/playground?model=image-lite")
	form := url.Values{"csrf": {p.csrf}, "model": {"image-lite"}, "idempotency_key": {match(t, idemField, page)},
		"in.positivePrompt": {"a red bicycle"}, "in.CFGScale": {"50"}}
	res := p.post("/console/playground", form)
	page = body(res)
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("CFGScale 50 answered %d: %.2000s", res.StatusCode, page)
	}
	input := match(t, regexp.MustCompile(`(<input type="number" id="in-CFGScale"[^>]*>)`), page)
	for _, want := range []string{`aria-invalid="true"`, `aria-describedby="hint-CFGScale error-CFGScale"`, `value="50"`} {
		if !strings.Contains(input, want) {
			t.Errorf("the guidance scale input lacks %s: %s", want, input)
		}
	}
	problem := match(t, regexp.MustCompile(`<span class="field-error error" id="error-CFGScale">([^<]*)</span>`), page)
	if !strings.Contains(problem, "less than or equal to 10") {
		t.Errorf("the problem under the field says %q", problem)
	}
	if !strings.Contains(page, `<details class="advanced" id="advanced" open>`) {
		t.Errorf("Advanced options stays folded over the field with a problem")
	}
	if strings.Contains(page, "Fill in the form to see the price.") || !strings.Contains(page, "A field has a problem to fix") {
		t.Errorf("the price box does not say a field has a problem: %.3000s", page[strings.Index(page, `id="quote"`):])
	}
	if n := strings.Count(page, `aria-invalid="true"`); n != 1 {
		t.Errorf("%d fields marked invalid, want only the guidance scale", n)
	}
	// A fresh page: nothing marked, Advanced folded, and an empty form is to be filled in.
	_, page = p.get("/console/playground?model=image-lite")
	if strings.Contains(page, `aria-invalid`) || strings.Contains(page, `id="advanced" open`) || !strings.Contains(page, "Fill in the form to see the price.") {
		t.Errorf("a fresh playground shows problems: %.3000s", page)
	}
}
