package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file follows the console's forms as a person sends them: each change is answered with a
// redirect, a secret is shown once on the page it leads to, and the same form sent again does
// nothing a second time.

var onceField = regexp.MustCompile(`name="once" value="([^"]+)"`)

// keysForm reads the mint form's tokens from the keys page.
func (p *person) keysForm() url.Values {
	p.t.Helper()
	_, page := p.get("/console/keys")
	return url.Values{"csrf": {html.UnescapeString(match(p.t, csrfField, page))}, "once": {match(p.t, onceField, page)},
		"expires_days": {"30"}, "ceiling_mode": {"plan"}, "scope": {"image:write"}}
}

func (p *person) liveKeys(account string) int {
	p.t.Helper()
	keys, err := p.s.auth.Keys(context.Background(), account)
	if err != nil {
		p.t.Fatal(err)
	}
	n := 0
	for _, k := range keys {
		if !k.Console && k.RevokedAt == nil {
			n++
		}
	}
	return n
}

var newKeyShown = regexp.MustCompile(`<code id="new-key" class="secret">([^<]+)</code>`)

// A mint answers 303 to the keys page, which shows the key once; a reload of that page shows
// it no more and mints nothing, and the same form sent again (the back button, a double
// click) mints nothing and says so. A fresh form mints a second key.
func TestConsoleMintRedirectsShowsOnceAndMintsOnce(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_prg", 1000)
	form := p.keysForm()
	res := p.post("/console/keys", form)
	body(res)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/keys" {
		t.Fatalf("mint answered %d to %q, want 303 to /console/keys", res.StatusCode, res.Header.Get("Location"))
	}
	_, page := p.get("/console/keys")
	m := newKeyShown.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, "minted. It is shown below once") {
		t.Fatalf("the keys page after the mint does not show the key and the message:\n%.3000s", page)
	}
	if _, again := p.get("/console/keys"); strings.Contains(again, m[1]) || strings.Contains(again, `id="new-key"`) {
		t.Fatal("a reload of the keys page shows the key again")
	}
	if n := p.liveKeys("acct_prg"); n != 1 {
		t.Fatalf("%d keys after one mint and a reload, want 1", n)
	}
	res = p.post("/console/keys", form)
	body(res)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/keys" {
		t.Fatalf("the same form sent again answered %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if _, page := p.get("/console/keys"); !strings.Contains(page, "already sent, so nothing was done again") || strings.Contains(page, `id="new-key"`) {
		t.Fatalf("the resent form's page does not say nothing was done, or shows a key:\n%.3000s", page)
	}
	if n := p.liveKeys("acct_prg"); n != 1 {
		t.Fatalf("%d keys after the same form was sent twice, want 1", n)
	}
	res = p.post("/console/keys", p.keysForm())
	body(res)
	if n := p.liveKeys("acct_prg"); res.StatusCode != http.StatusSeeOther || n != 2 {
		t.Fatalf("a fresh form answered %d and left %d keys, want 303 and 2", res.StatusCode, n)
	}
}

// A refused mint is shown again with its reason, and the form, once fixed, can be sent.
func TestConsoleRefusedMintCanBeFixedAndSent(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_fix", 1000)
	form := p.keysForm()
	form.Set("ceiling_mode", "fixed")
	form.Set("ceiling", "lots")
	form.Set("expires_days", "365")
	res := p.post("/console/keys", form)
	if page := body(res); res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "whole number of credits") {
		t.Fatalf("a bad ceiling answered %d:\n%.2000s", res.StatusCode, page)
	} else if !strings.Contains(page, `<option value="365" selected>`) {
		t.Fatalf("the refused form lost its lifetime of 365 days:\n%.4000s", page)
	}
	form.Set("ceiling", "1500")
	res = p.post("/console/keys", form)
	body(res)
	if n := p.liveKeys("acct_fix"); res.StatusCode != http.StatusSeeOther || n != 1 {
		t.Fatalf("the fixed form answered %d and left %d keys", res.StatusCode, n)
	}
}

// The ceiling's figure has a label of its own (not only a placeholder inside the radio's).
func TestConsoleCeilingInputHasItsOwnLabel(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_lbl", 1000)
	_, page := p.get("/console/keys")
	if !strings.Contains(page, `<label for="ceiling-amount">Ceiling in credits a month</label>`) ||
		!regexp.MustCompile(`<input [^>]*name="ceiling" id="ceiling-amount"`).MatchString(page) {
		t.Fatalf("the ceiling input has no label of its own:\n%.4000s", page)
	}
}

// image-4b with only a width breaks width_height_pair, which is warned, not enforced: the
// playground's price says so, and so does the job page the run leads to.
func TestConsolePlaygroundShowsWarnings(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_warn", 100000)
	_, page := p.get("/console/playground?model=image-4b")
	csrf := html.UnescapeString(match(t, csrfField, page))
	idem := match(t, regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`), page)
	form := url.Values{"csrf": {csrf}, "model": {"image-4b"}, "in.positivePrompt": {"a lighthouse"}, "in.width": {"512"}, "in.steps": {"1"}}
	res := p.post("/console/playground/quote", form)
	if q := body(res); !strings.Contains(q, `"ok":true`) || !strings.Contains(q, "width_height_pair") || !strings.Contains(q, "Width and height are sent together") {
		t.Fatalf("the quote of a width alone has no warning: %s", q)
	}
	form.Set("idempotency_key", idem)
	res = p.post("/console/playground", form)
	body(res)
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/jobs/") {
		t.Fatalf("the run answered %d to %q", res.StatusCode, loc)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(loc, "/console/jobs/"), "?submitted=1")
	if j, err := s.srv.Jobs().GetByID(context.Background(), "acct_warn", id); err != nil {
		t.Fatal(err)
	} else if _, _, err := s.srv.Jobs().Wait(context.Background(), "acct_warn", j.RequestID, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	_, job := p.get(loc)
	if !strings.Contains(job, `id="job-warnings"`) || !strings.Contains(job, "width_height_pair") {
		t.Fatalf("the job page does not show the warning:\n%.3000s", job)
	}
	if _, again := p.get(strings.TrimSuffix(loc, "?submitted=1")); strings.Contains(again, `id="job-warnings"`) {
		t.Fatal("the warning is shown again on a later visit (it belongs to the run's answer)")
	}
}

// A failed job's page shows the error code and the catalogue's sentence, not the runner's
// chain of Go errors.
func TestConsoleFailedJobShowsCodeAndSentence(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_failed", 100000)
	_, page := p.get("/console/playground?model=image-edit")
	form := url.Values{"csrf": {html.UnescapeString(match(t, csrfField, page))}, "model": {"image-edit"},
		"idempotency_key":   {match(t, regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`), page)},
		"in.positivePrompt": {"a red door"}, "in.steps": {"1"}, "in.width": {"256"}, "in.height": {"256"},
		"in.inputs.referenceImages": {"https://127.0.0.1:1/missing.png"}}
	res := p.post("/console/playground", form)
	if b := body(res); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the run answered %d:\n%.2000s", res.StatusCode, b)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(res.Header.Get("Location"), "/console/jobs/"), "?submitted=1")
	j, err := s.srv.Jobs().GetByID(context.Background(), "acct_failed", id)
	if err != nil {
		t.Fatal(err)
	}
	if j, _, err = s.srv.Jobs().Wait(context.Background(), "acct_failed", j.RequestID, 20*time.Second); err != nil || j.ErrorCode == "" {
		t.Fatalf("the job did not fail: %+v %v", j, err)
	}
	_, job := p.get("/console/jobs/" + id)
	errRow := job[strings.Index(job, `id="job-error"`):]
	errRow = errRow[:strings.Index(errRow, "</dd>")]
	if !strings.Contains(errRow, `<code id="job-error-code">`+j.ErrorCode+`</code>`) || !strings.Contains(errRow, `class="error-sentence"`) {
		t.Fatalf("the error row lacks the code or the sentence:\n%s", errRow)
	}
	if j.ErrorMessage != "" && strings.Contains(job, html.EscapeString(j.ErrorMessage)) {
		t.Fatalf("the page shows the runner's message %q", j.ErrorMessage)
	}
	if strings.Contains(errRow, "dial tcp") || strings.Contains(errRow, "Get &#34;") {
		t.Fatalf("the error row shows the chain of causes:\n%s", errRow)
	}
	if strings.Contains(errRow, "<pre") {
		t.Fatal("the error row holds a <pre> block")
	}
}

// Issue 29 (keys): a key is minted with a name, which the keys page shows beside its id; a
// name over 64 characters or holding a line break is refused with the form kept, and mints
// nothing.
func TestConsoleKeyNames(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_names", 1000)
	bad := p.keysForm()
	bad.Set("name", "billing\nworker")
	res := p.post("/console/keys", bad)
	page := body(res)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "A key&#39;s name is on one line") || p.liveKeys("acct_names") != 0 {
		t.Fatalf("a name with a line break: %d, %d keys", res.StatusCode, p.liveKeys("acct_names"))
	}
	form := p.keysForm()
	form.Set("name", "  billing worker  ")
	if res := p.post("/console/keys", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("mint with a name: %d", res.StatusCode)
	}
	if _, page := p.get("/console/keys"); !strings.Contains(page, `<strong class="key-name">billing worker</strong>`) {
		t.Fatalf("the keys page does not show the key's name:\n%.3000s", page)
	}
}

// A form sent after the session ended (signed out in another tab) is not acted on, and the
// person is told so: the sign-in page says the form was not sent and leads back to the page
// the form was on, instead of a bare sign-in.
func TestConsoleFormAfterTheSessionEndedSaysItWasNotSent(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_gone", 100)
	u, _ := url.Parse(s.url + "/console/")
	cookies := p.c.Jar.Cookies(u)
	if res := p.post("/console/sign-out", url.Values{"csrf": {p.csrf}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out answered %d", res.StatusCode)
	}
	// The other tab still holds the old cookie and sends the keys form.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/console/keys", strings.NewReader(url.Values{"csrf": {p.csrf}, "name": {"ci deploy"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url)
	req.Header.Set("Referer", s.url+"/console/keys")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || loc != "/console/sign-in?next=%2Fconsole%2Fkeys&unsent=1" {
		t.Fatalf("a form after the session ended: %d to %q", res.StatusCode, loc)
	}
	code, page := p.get(loc)
	if code != http.StatusOK || !strings.Contains(page, "the form was sent, so it was not") || !strings.Contains(page, `name="next" value="/console/keys"`) {
		t.Fatalf("the sign-in page after an unsent form: %d %.2000s", code, page)
	}
}

var mostCredits = regexp.MustCompile(`at most ([0-9,]+) credits`)

// A ceiling above what the plan allows, or too large to be a number at all, is refused with the
// most the key may have (spec 02, per-key credit ceilings #3: ceiling_too_high with the most
// allowed in `ceiling`), and that figure is accepted.
func TestConsoleCeilingTooHighSaysTheMostAllowed(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_most", 1000)
	most := ""
	for _, tc := range []struct{ ceiling, says string }{
		{"500000000", "above what the plan allows"},
		{"99999999999999999999", "far more than a key may have"},
	} {
		form := p.keysForm()
		form.Set("ceiling_mode", "fixed")
		form.Set("ceiling", tc.ceiling)
		form.Set("expires_days", "90")
		res := p.post("/console/keys", form)
		page := body(res)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, tc.says) || strings.Contains(page, "is a whole number of credits") {
			t.Fatalf("ceiling %s answered %d:\n%.2000s", tc.ceiling, res.StatusCode, page)
		}
		got := match(t, mostCredits, page)
		if most != "" && got != most {
			t.Fatalf("ceiling %s says at most %s, the other at most %s", tc.ceiling, got, most)
		}
		most = got
	}
	n, _ := strconv.ParseInt(strings.ReplaceAll(most, ",", ""), 10, 64)
	form := p.keysForm()
	form.Set("ceiling_mode", "fixed")
	form.Set("ceiling", strconv.FormatInt(n+1, 10))
	form.Set("expires_days", "90")
	if res := p.post("/console/keys", form); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("one above the most (%d) answered %d", n+1, res.StatusCode)
	}
	form = p.keysForm()
	form.Set("ceiling_mode", "fixed")
	form.Set("ceiling", most)
	form.Set("expires_days", "90")
	res := p.post("/console/keys", form)
	body(res)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the most allowed (%s) answered %d", most, res.StatusCode)
	}
}
