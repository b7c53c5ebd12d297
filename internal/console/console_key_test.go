package console_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// This file follows the console's key as a person meets it: runs from the playground are
// charged under a key record of the account, the keys page lists that key as the console's,
// refuses to revoke it and does not count it among the live keys, and usage by key and the
// usage export (per day and per charge) count those runs, adding up to GET /v1/usage.

// post sends a console form with the session's CSRF token (read from the page at from) and the
// console's own origin.
func (p *usagePerson) post(from, path string, form url.Values) (int, http.Header, string) {
	p.t.Helper()
	m := usageCSRF.FindStringSubmatch(p.page(from))
	if m == nil {
		p.t.Fatalf("no csrf field on %s", from)
	}
	form.Set("csrf", html.UnescapeString(m[1]))
	req, _ := http.NewRequest(http.MethodPost, p.s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", p.s.url)
	res, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

var playgroundIdem = regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`)

// playgroundRun runs image-lite from the playground's form with a prompt and waits for the job
// to settle.
func (p *usagePerson) playgroundRun(account, prompt string) jobs.Job {
	p.t.Helper()
	m := playgroundIdem.FindStringSubmatch(p.page("/console/playground?model=image-lite"))
	if m == nil {
		p.t.Fatal("the playground's form has no idempotency key")
	}
	code, hd, body := p.post("/console/playground?model=image-lite", "/console/playground",
		url.Values{"model": {"image-lite"}, "idempotency_key": {m[1]}, "in.positivePrompt": {prompt}})
	if code != http.StatusSeeOther {
		p.t.Fatalf("playground run %q answered %d: %.2000s", prompt, code, body)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(hd.Get("Location"), "/console/jobs/"), "?submitted=1")
	ctx := context.Background()
	j, err := p.s.srv.Jobs().GetByID(ctx, account, id)
	if err != nil {
		p.t.Fatal(err)
	}
	j, timedOut, err := p.s.srv.Jobs().Wait(ctx, account, j.RequestID, 20*time.Second)
	if err != nil || timedOut {
		p.t.Fatalf("job %s did not settle: %v (timed out %v)", id, err, timedOut)
	}
	return j
}

var keysRow = regexp.MustCompile(`(?s)<tr data-key="([^"]+)" class="([^"]*)">(.*?)</tr>`)

// keyRows reads the keys page's table: each row's classes and cells by key id.
func keyRows(page string) map[string][2]string {
	out := map[string][2]string{}
	for _, r := range keysRow.FindAllStringSubmatch(page, -1) {
		out[r[1]] = [2]string{r[2], r[3]}
	}
	return out
}

// TestACC15_PlaygroundRunsInTheUsageExport: an account whose only spend is the playground's
// (one run kept, one failed and refunded) finds those charges under its console key in GET
// /v1/usage, in the usage page's table per key, and in both exports: the per-charge file lists
// every charge and refund, and its lines, like the per-day rows, add up to GET /v1/usage.
func TestACC15_PlaygroundRunsInTheUsageExport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s := newUsageSite(t, db, 0)
		key := s.account("acct_pg") // a key to call the API with; it spends nothing
		p := s.signIn("acct_pg")
		kept := p.playgroundRun("acct_pg", "a lighthouse at dusk")
		failed := p.playgroundRun("acct_pg", "fail this one")
		console := auth.ConsoleKeyIDOf("acct_pg")
		if kept.KeyID != console || failed.KeyID != console || kept.Outcome != jobs.Succeeded || failed.Outcome != jobs.Failed ||
			kept.Charged == 0 || failed.Reserved == 0 {
			t.Fatalf("playground jobs: %+v / %+v, want both under %s", kept, failed, console)
		}
		// The console's key keeps its spend, as any key does.
		k, err := s.auth.ConsoleKey(context.Background(), "acct_pg")
		if err != nil || !k.Console || k.SpentIn(s.clock.Now()) != kept.Charged {
			t.Fatalf("console key %+v %v: spent %d, want %d", k, err, k.SpentIn(s.clock.Now()), kept.Charged)
		}

		// GET /v1/usage: one line, the console's key.
		code, _, body := s.apiGet("/v1/usage", key)
		var usage struct {
			Data []struct {
				KeyID    string `json:"key_id"`
				Charged  int64  `json:"credits_charged"`
				Refunded int64  `json:"credits_refunded"`
				Jobs     int64  `json:"jobs"`
			} `json:"data"`
			Total struct {
				Charged  int64 `json:"credits_charged"`
				Refunded int64 `json:"credits_refunded"`
				Net      int64 `json:"net"`
				Jobs     int64 `json:"jobs"`
			} `json:"total"`
		}
		if err := json.Unmarshal([]byte(body), &usage); code != http.StatusOK || err != nil {
			t.Fatalf("/v1/usage %d %v: %s", code, err, body)
		}
		if len(usage.Data) != 1 || usage.Data[0].KeyID != console || usage.Total.Jobs != 2 ||
			usage.Total.Charged != kept.Charged+failed.Reserved || usage.Total.Refunded != failed.Reserved {
			t.Fatalf("/v1/usage: %s", body)
		}
		if got := tableRow(t, p.page("/console/usage"), "usage-keys", console); strings.Join(got, " ") !=
			strings.Join([]string{"2", cr(usage.Total.Charged), cr(usage.Total.Refunded), cr(usage.Total.Net)}, " ") {
			t.Fatalf("usage page's row of the console key = %v", got)
		}

		// The per-charge export: two charges and a refund, all the console key's, adding up.
		for _, src := range []string{"api", "console"} {
			var code int
			var body string
			if src == "api" {
				code, _, body = s.apiGet("/v1/usage/export?granularity=job", key)
			} else {
				code, _, body = p.get("/console/usage/export.csv?window=month&granularity=job")
			}
			recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if code != http.StatusOK || err != nil || len(recs) == 0 {
				t.Fatalf("%s per-charge export %d %v: %s", src, code, err, body)
			}
			var ch, ref, charges int64
			for _, r := range recs[1:] {
				if r[1] != console {
					t.Fatalf("%s per-charge export: a line under %q, want %s: %v", src, r[1], console, r)
				}
				c, _ := strconv.ParseInt(r[5], 10, 64)
				f, _ := strconv.ParseInt(r[6], 10, 64)
				ch, ref = ch+c, ref+f
				if r[4] == "charge" {
					charges++
				}
			}
			if len(recs) != 4 || ch != usage.Total.Charged || ref != usage.Total.Refunded || charges != usage.Total.Jobs {
				t.Fatalf("%s per-charge export adds up to %d/%d/%d jobs, /v1/usage %+v:\n%s", src, ch, ref, charges, usage.Total, body)
			}
		}
		// The per-day export too.
		code, _, body = s.apiGet("/v1/usage/export", key)
		recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if code != http.StatusOK || err != nil || len(recs) != 2 || recs[1][1] != console || recs[1][3] != "2" ||
			recs[1][4] != cr(usage.Total.Charged) || recs[1][5] != cr(usage.Total.Refunded) || recs[1][6] != cr(usage.Total.Net) {
			t.Fatalf("per-day export %d %v:\n%s", code, err, body)
		}
	})
}

// TestKEY27_ConsoleKeyOnTheKeysPage: the keys page lists the console's key from the first
// visit, named and marked as the console's, with no revoke button; revoking it anyway is
// refused with a message and leaves it live, for the console to go on using. It holds no
// live-key slot: a free account mints its two keys beside it, and the third is refused.
func TestKEY27_ConsoleKeyOnTheKeysPage(t *testing.T) {
	db := storetest.OpenSQLite(t)
	s := newUsageSite(t, db, 0)
	storetest.NewAccount(t, db, "acct_free", auth.Free, 1000)
	if _, err := s.sessions.CreateUser(context.Background(), auth.NewUser{AccountID: "acct_free", Email: "acct_free@example.com",
		Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	p := s.signIn("acct_free")
	console := auth.ConsoleKeyIDOf("acct_free")

	page := p.page("/console/keys")
	row, ok := keyRows(page)[console]
	if !ok || !strings.Contains(row[0], "console") || !strings.Contains(row[0], "live") || !strings.Contains(row[1], ">Console<") ||
		strings.Contains(row[1], "/revoke") || !strings.Contains(row[1], "cannot be revoked") {
		t.Fatalf("the console's key on the keys page: %q\n%.3000s", row, page)
	}
	if !strings.Contains(page, "0 of 2 live keys in use") {
		t.Fatalf("the console's key counted as a live key:\n%.3000s", page)
	}
	if home := p.page("/console/"); !regexp.MustCompile(`Live keys</div><div class="figure">0 / 2<`).MatchString(home) {
		t.Fatalf("the overview counts the console's key")
	}

	// Revoking it is refused, with a message; it stays live.
	code, _, body := p.post("/console/keys", "/console/keys/"+console+"/revoke", url.Values{})
	if code != http.StatusConflict || !strings.Contains(body, "cannot be revoked") || !strings.Contains(body, "Console key") {
		t.Fatalf("revoking the console's key answered %d: %.3000s", code, body)
	}
	if k, err := s.auth.ConsoleKey(context.Background(), "acct_free"); err != nil || k.RevokedAt != nil || k.Status(s.clock.Now()) != auth.KeyLive {
		t.Fatalf("the console's key after a refused revocation: %+v %v", k, err)
	}
	a, _ := s.auth.Account(context.Background(), "acct_free")
	if pr, err := s.auth.ConsolePrincipal(context.Background(), a); err != nil || pr.Key.ID != console {
		t.Fatalf("the console's principal after the refused revocation: %+v %v", pr.Key, err)
	}

	// The free plan's two keys are minted beside it; a third is refused.
	mint := url.Values{"expires_days": {"30"}, "ceiling_mode": {"plan"}}
	for i := range 3 {
		code, _, body := p.post("/console/keys", "/console/keys", mint)
		want := http.StatusSeeOther // post/redirect/get: the keys page shows the new key
		if i == 2 {
			want = http.StatusConflict
		}
		if code != want {
			t.Fatalf("mint %d answered %d, want %d: %.2000s", i+1, code, want, body)
		}
	}
	page = p.page("/console/keys")
	if rows := keyRows(page); len(rows) != 3 || !strings.Contains(page, "2 of 2 live keys in use") {
		t.Fatalf("keys after minting: %d rows\n%.3000s", len(rows), page)
	}
}
