package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
)

// TestERR27_ConsoleLimitedAccountGetsNoDownloadLinks: a limited account may read but not
// download (spec 02 account_limited, bucket egress; GET /v1/jobs/{id}/assets and the result
// read refuse it). Its console used to sign links to its outputs on the job page, in the live
// view and in the previews of the lists, and those links downloaded. The console now signs
// through the API's egress admission: a limited (or banned) account's outputs are listed by
// name, type and size without links, each page says why in words, and no page carries a link
// to a file; once live again the links come back.
func TestERR27_ConsoleLimitedAccountGetsNoDownloadLinks(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_egress", 100000)
	img := p.run("image-4b", map[string]string{"positivePrompt": "a lighthouse at dusk", "width": "256", "height": "256", "steps": "2"})
	if _, page := p.get("/console/jobs/" + img); !imgSrc.MatchString(page) {
		t.Fatalf("a live account's job page shows no preview:\n%.3000s", page)
	}

	for _, st := range []auth.Status{auth.Limited, auth.Banned} {
		if err := s.db.SetAccountStatus(context.Background(), "acct_egress", st); err != nil {
			t.Fatal(err)
		}
		want := "account_" + string(st)
		if st == auth.Limited {
			want = "account_limited, bucket egress"
		}
		noLinks := func(what, page string) {
			t.Helper()
			if strings.Contains(page, "/files/") || imgSrc.MatchString(page) {
				t.Errorf("the %s of a %s account carries a link to a file:\n%.4000s", what, st, page)
			}
		}
		code, page := p.get("/console/jobs/" + img)
		if code != http.StatusOK || !strings.Contains(page, `id="links-refused"`) || !strings.Contains(page, want) ||
			!strings.Contains(page, "listed without links") || !strings.Contains(page, "no link") {
			t.Errorf("the job page of a %s account answered %d without saying why its files have no links:\n%.4000s", st, code, page)
		}
		if st == auth.Limited && !strings.Contains(page, "may read but not download") {
			t.Errorf("the job page of a limited account does not say it may not download:\n%.4000s", page)
		}
		noLinks("job page", page)

		code, raw := p.get("/console/jobs/" + img + "/live")
		var live struct {
			Outputs []struct {
				URL  string `json:"url"`
				Name string `json:"name"`
			} `json:"outputs"`
			LinksRefused string `json:"links_refused"`
		}
		if err := json.Unmarshal([]byte(raw), &live); err != nil || code != http.StatusOK {
			t.Fatalf("live view %d %v: %s", code, err, raw)
		}
		if len(live.Outputs) == 0 || live.Outputs[0].Name == "" || !strings.Contains(live.LinksRefused, want) {
			t.Errorf("the live view of a %s account does not list its outputs with the reason: %s", st, raw)
		}
		noLinks("live view", raw)

		for _, path := range []string{"/console/jobs", "/console/"} {
			code, page := p.get(path)
			if code != http.StatusOK || !strings.Contains(page, `id="links-refused"`) || !strings.Contains(page, want) {
				t.Errorf("%s of a %s account answered %d without saying why there are no previews:\n%.4000s", path, st, code, page)
			}
			noLinks(path, page)
		}
	}

	if err := s.db.SetAccountStatus(context.Background(), "acct_egress", auth.Live); err != nil {
		t.Fatal(err)
	}
	_, page := p.get("/console/jobs/" + img)
	fetch(t, match(t, imgSrc, page), "image/")
	if strings.Contains(page, `id="links-refused"`) {
		t.Errorf("the job page of a live account says its links were refused")
	}
}
