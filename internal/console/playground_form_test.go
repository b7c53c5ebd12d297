package console_test

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// The playground's form as a person reads it: the contract's members under labels for people,
// the prompt first and width beside height, members of objects as fields of their own (not
// JSON boxes), tick boxes for booleans, the rest folded, and violations in words.
func TestConsolePlaygroundFormReadsForAPerson(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_form", 100000)
	_, page := p.get("/console/playground?model=image-4b")
	for _, want := range []string{
		`<label for="in-positivePrompt" class="name">Prompt`,
		`<label for="in-CFGScale" class="name">Guidance scale (CFG)</label>`,
		`<div class="field number half">`, // width and height share a row
		`<details class="advanced" id="advanced"><summary>Advanced options (`,
		`<input type="checkbox" id="in-acceleratorOptions.teaCache" name="in.acceleratorOptions.teaCache" value="true"`,
		`<label for="in-acceleratorOptions.cacheEndStep" class="name">Accelerator options: cache end step</label>`,
		`<input type="number" id="in-width" name="in.width" data-field="width" value="" placeholder="1024" step="1" min="128" max="2048"`,
		`<button type="submit" id="run">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the form lacks %s", want)
		}
	}
	if strings.Contains(page, `name="in.acceleratorOptions" `) {
		t.Error("acceleratorOptions is still a JSON box")
	}
	order := []string{`id="in-positivePrompt"`, `id="in-width"`, `id="in-height"`, `id="in-steps"`, `<details class="advanced"`, `id="in-CFGScale"`}
	for i := 1; i < len(order); i++ {
		if a, b := strings.Index(page, order[i-1]), strings.Index(page, order[i]); a < 0 || b < 0 || a > b {
			t.Errorf("%s does not come before %s", order[i-1], order[i])
		}
	}
	if t.Failed() {
		t.Logf("%.6000s", page[strings.Index(page, `<form method="post"`):])
	}

	csrf := html.UnescapeString(match(t, csrfField, page))
	quote := func(form url.Values) string {
		form.Set("csrf", csrf)
		form.Set("model", "image-4b")
		return body(p.post("/console/playground/quote", form))
	}
	if q := quote(url.Values{"in.width": {"512"}, "in.height": {"512"}}); !strings.Contains(q, `"Prompt is required."`) {
		t.Errorf("an empty prompt is not said in words: %s", q)
	}
	// A member of an object reaches the body at its place: out of bounds, it is refused by name.
	if q := quote(url.Values{"in.positivePrompt": {"x"}, "in.acceleratorOptions.cacheMaxConsecutiveSteps": {"9"}}); !strings.Contains(q, "Accelerator options: cache max consecutive steps: ") {
		t.Errorf("a nested member out of bounds: %s", q)
	}
	// A tick box is sent only when it differs from the default, as true.
	if q := quote(url.Values{"in.positivePrompt": {"x"}, "in.acceleratorOptions.teaCache": {"false", "true"}}); !strings.Contains(q, `"ok":true`) {
		t.Errorf("a ticked box: %s", q)
	}
	// A violation of a run is in words too, and says nothing was charged.
	_, page = p.get("/console/playground?model=image-4b")
	res := p.post("/console/playground", url.Values{"csrf": {csrf}, "model": {"image-4b"}, "in.width": {"512"},
		"idempotency_key": {match(t, regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`), page)}})
	if b := body(res); !strings.Contains(b, "<li>Prompt is required.</li>") || !strings.Contains(b, "nothing was charged") {
		t.Errorf("a run without a prompt answered %d:\n%.3000s", res.StatusCode, b)
	}
}
