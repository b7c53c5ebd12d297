package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestConsoleKeyNamesThatReadAsAnotherAreRefused: the keys page is where a person tells keys
// apart, so a name holding invisible direction overrides or zero-width spaces (U+202E makes
// "\u202Eevil\u202C" show as "live") is refused with the form kept and nothing minted; the
// message says what was refused. Names in any script, with emoji (joiners and all), are kept.
func TestConsoleKeyNamesThatReadAsAnotherAreRefused(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_bidi", 1000)
	for _, name := range []string{"\u202Eevil\u202C worker", "ci\u2066deploy\u2069", "billing\u200bworker", "\u200fstaging"} {
		form := p.keysForm()
		form.Set("name", name)
		res := p.post("/console/keys", form)
		page := body(res)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "invisible direction marks or zero-width spaces") || p.liveKeys("acct_bidi") != 0 {
			t.Fatalf("name %q: %d, %d keys minted:\n%.2000s", name, res.StatusCode, p.liveKeys("acct_bidi"), page)
		}
	}
	form := p.keysForm()
	form.Set("name", "équipe 東京 👨‍👩‍👧")
	if res := p.post("/console/keys", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a name in other scripts with an emoji sequence: %d", res.StatusCode)
	}
	if _, page := p.get("/console/keys"); !strings.Contains(page, "équipe 東京 👨‍👩‍👧") {
		t.Fatal("the keys page does not show the name as minted")
	}
}
