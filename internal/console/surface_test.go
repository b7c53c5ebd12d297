package console_test

import (
	"bytes"
	"html"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// This file sends the console what a browser would not: garbled forms, methods its pages do not
// take, addresses that are not text. Each gets a page for a person with the status that fits.

// send is one request with the person's cookies and the console's own origin.
func (p *person) send(method, path, contentType string, payload []byte) (int, http.Header, string) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.s.url+path, bytes.NewReader(payload))
	if err != nil {
		p.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Origin", p.s.url)
	res, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	return res.StatusCode, res.Header, body(res)
}

// A form that cannot be read is 400 with a page saying so; only a form over the size limit is
// 413. The sign-in form and a signed-in form alike.
func TestConsoleGarbledFormIs400AndOnlyTooLargeIs413(t *testing.T) {
	s := newSite(t)
	const form = "application/x-www-form-urlencoded"
	jar, _ := cookiejar.New(nil)
	stranger := &person{t: t, s: s, c: &http.Client{Jar: jar}}
	if code, _, page := stranger.send(http.MethodPost, "/console/sign-in", form, []byte("email=%zz&password=%")); code != http.StatusBadRequest || !strings.Contains(page, "could not be read") {
		t.Errorf("garbled sign-in: %d\n%.2000s", code, page)
	}
	if code, _, page := stranger.send(http.MethodPost, "/console/sign-in?a;b", form, []byte("email=a%40example.com&password=x")); code != http.StatusBadRequest || !strings.Contains(page, "could not be read") {
		t.Errorf("sign-in with a semicolon in its query: %d\n%.2000s", code, page)
	}

	p := s.signIn(t, "acct_garbled", 1000)
	token := html.UnescapeString(p.csrf)
	csrf := "csrf=" + url.QueryEscape(token)
	for name, c := range map[string]struct {
		path, body string
	}{
		"stray percent": {"/console/keys", csrf + "&name=%zz"},
		"semicolon":     {"/console/keys?a;b", csrf + "&name=x"},
	} {
		if code, _, page := p.send(http.MethodPost, c.path, form, []byte(c.body)); code != http.StatusBadRequest || !strings.Contains(page, "could not be read") {
			t.Errorf("%s: %d\n%.2000s", name, code, page)
		}
	}
	if n := p.liveKeys("acct_garbled"); n != 0 {
		t.Errorf("%d keys minted by garbled forms", n)
	}
	big := csrf + "&name=" + strings.Repeat("x", 300<<10)
	if code, _, page := p.send(http.MethodPost, "/console/keys", form, []byte(big)); code != http.StatusRequestEntityTooLarge || !strings.Contains(page, "larger than the console takes") {
		t.Errorf("form over the limit: %d\n%.2000s", code, page)
	}
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.WriteField("csrf", token)
	fw, _ := mw.CreateFormFile("image", "big.png")
	_, _ = fw.Write(bytes.Repeat([]byte{1}, 300<<10))
	_ = mw.Close()
	if code, _, page := p.send(http.MethodPost, "/console/keys", mw.FormDataContentType(), mp.Bytes()); code != http.StatusRequestEntityTooLarge {
		t.Errorf("multipart form over the limit: %d\n%.2000s", code, page)
	}
	if code, _, page := p.send(http.MethodPost, "/console/keys", "multipart/form-data; boundary=zz", []byte("--zz\r\nbroken")); code != http.StatusBadRequest || !strings.Contains(page, "could not be read") {
		t.Errorf("broken multipart form: %d\n%.2000s", code, page)
	}
}

// A method a console page does not take is 405 with the methods it does in Allow; an address
// with no page under any method stays 404.
func TestConsoleWrongMethodIs405WithAllow(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_method", 1000)
	for _, c := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodPut, "/console/keys", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{http.MethodDelete, "/console/keys/key_1/revoke", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/console/usage", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPut, "/console/no-such-page", http.StatusNotFound, ""},
		{http.MethodGet, "/console/no-such-page", http.StatusNotFound, ""},
	} {
		code, hd, page := p.send(c.method, c.path, "", nil)
		if code != c.code || hd.Get("Allow") != c.allow || !strings.Contains(page, "<html") {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q\n%.1000s", c.method, c.path, code, hd.Get("Allow"), c.code, c.allow, page)
		}
		if c.code == http.StatusMethodNotAllowed && !strings.Contains(page, "does not take "+c.method) {
			t.Errorf("%s %s: the page does not say which method it does not take\n%.2000s", c.method, c.path, page)
		}
	}
}

// An address whose path is not text (percent-encoded bytes that are not UTF-8) names no page:
// the 404 page, before any lookup, on SQLite and on PostgreSQL, which refuses such bytes.
func TestConsolePathNotUTF8Is404(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s := newSiteOn(t, db)
		p := s.signIn(t, "acct_bytes", 1000)
		form := "csrf=" + url.QueryEscape(html.UnescapeString(p.csrf))
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/console/jobs/%FF"},
			{http.MethodGet, "/console/jobs/job_%C3%28"},
			{http.MethodPost, "/console/webhooks/%FF/delete"},
			{http.MethodPost, "/console/keys/%FF/revoke"},
		} {
			code, _, page := p.send(c.method, c.path, "application/x-www-form-urlencoded", []byte(form))
			if code != http.StatusNotFound || !strings.Contains(page, "There is no such page.") {
				t.Errorf("%s %s: %d\n%.2000s", c.method, c.path, code, page)
			}
		}
	})
}
