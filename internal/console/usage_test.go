package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// This file tests the usage page and its CSV download over HTTP, on SQLite and PostgreSQL,
// against charges and refunds made through real jobs. Names are prefixed usage* so they stay
// apart from the other pages' helpers.

const usageSecret = "console-usage-test-secret-0123456789"

// usageClock is a clock the test moves by hand: jobs are run on chosen days, then the person
// signs in at the last of them.
type usageClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *usageClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *usageClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// usageRunner stands in for image-lite: a prompt starting with "fail" fails (the job is
// refunded); any other writes a small PNG.
type usageRunner struct{}

func (usageRunner) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	var in struct {
		Prompt string `json:"positivePrompt"`
	}
	_ = json.Unmarshal(job.Input, &in)
	if strings.HasPrefix(in.Prompt, "fail") {
		return runners.Result{}, &runners.Failure{Code: "runner_failed", Message: "asked to fail"}
	}
	key, err := env.Outputs.Put(ctx, "image-0.png", "image/png", bytes.Repeat([]byte{7}, 100))
	if err != nil {
		return runners.Result{}, err
	}
	return runners.Result{
		Document: map[string]any{"images": []any{map[string]any{"storage_key": key, "content_type": "image/png"}}},
		Files:    []runners.File{{Key: key, ContentType: "image/png", Bytes: 100}},
		Done:     1,
	}, nil
}

// usageSite is the whole server's account API host, with the console.
type usageSite struct {
	t        testing.TB
	db       *sqlstore.DB
	clock    *usageClock
	auth     *auth.Service
	sessions *auth.Sessions
	srv      *server.Server
	url      string
}

func newUsageSite(t testing.TB, db *sqlstore.DB, exportRows int) *usageSite {
	t.Helper()
	s := &usageSite{t: t, db: db, clock: &usageClock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}}
	log := slog.New(slog.DiscardHandler)
	s.auth = auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher(usageSecret), s.clock.Now, log)
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	s.url = ts.URL
	srv, err := server.New(context.Background(),
		server.Config{Roles: server.Every(), Secret: usageSecret, NoRateLimits: true, PublicURLAPI: ts.URL, PublicURLQueue: "http://queue.test",
			PasswordCost: 4, UsageExportRows: exportRows},
		server.Deps{DB: db, Auth: s.auth, Now: s.clock.Now, Log: log, Bucket: blobs.NewMemory(),
			Catalogue: func(catalog.Hosts) (*catalog.Catalog, error) { return catalog.Default() },
			Runners:   func(*catalog.Catalog) runners.Registry { return runners.Registry{"image-lite": usageRunner{}} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Jobs().Drain() })
	s.srv = srv
	h = srv.Handler(server.RoleAPI)
	s.sessions = auth.NewSessions(auth.SessionsConfig{Store: db, APIPrefix: auth.DefaultPrefix, Hasher: auth.NewHasher(usageSecret),
		Now: s.clock.Now, Cost: 4})
	return s
}

// account makes an account with credits, a key of it and a console user; it answers the key.
func (s *usageSite) account(id string) string {
	s.t.Helper()
	storetest.NewAccount(s.t, s.db, id, auth.Pro, 100000)
	if _, err := s.sessions.CreateUser(context.Background(), auth.NewUser{AccountID: id, Email: id + "@example.com", Password: "correct horse battery"}); err != nil {
		s.t.Fatal(err)
	}
	return s.mint(id)
}

func (s *usageSite) mint(account string) string {
	s.t.Helper()
	m, err := s.auth.Mint(context.Background(), auth.MintParams{AccountID: account})
	if err != nil {
		s.t.Fatal(err)
	}
	return m.Key
}

// run submits an image-lite job with the key at the clock's time, as the queue host does, and
// waits for it to settle.
func (s *usageSite) run(key, prompt string) jobs.Job {
	s.t.Helper()
	ctx := context.Background()
	pk, err := s.auth.Parse(key)
	if err != nil {
		s.t.Fatal(err)
	}
	p, err := s.auth.Authenticate(ctx, pk, false)
	if err != nil {
		s.t.Fatal(err)
	}
	m, _ := s.srv.Catalog().Model("image-lite")
	res, err := s.srv.Jobs().Submit(ctx, jobs.SubmitRequest{Principal: &p, Model: m, Body: []byte(`{"positivePrompt":"` + prompt + `"}`),
		IdempotencyKey: prompt})
	if err != nil {
		s.t.Fatalf("submit %s: %v", prompt, err)
	}
	j, timedOut, err := s.srv.Jobs().Wait(ctx, res.Job.AccountID, res.Job.RequestID, 20*time.Second)
	if err != nil || timedOut {
		s.t.Fatalf("job %s did not settle: %v (timed out %v)", res.Job.ID, err, timedOut)
	}
	return j
}

// usagePerson is a signed-in browser that does not follow redirects.
type usagePerson struct {
	t testing.TB
	s *usageSite
	c *http.Client
}

var usageCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (s *usageSite) signIn(account string) *usagePerson {
	s.t.Helper()
	jar, _ := cookiejar.New(nil)
	p := &usagePerson{t: s.t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, _, page := p.get("/console/sign-in")
	m := usageCSRF.FindStringSubmatch(page)
	if m == nil {
		s.t.Fatalf("no csrf field: %.1000s", page)
	}
	form := url.Values{"csrf": {html.UnescapeString(m[1])}, "email": {account + "@example.com"}, "password": {"correct horse battery"}}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/console/sign-in", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := p.c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("sign-in answered %d", res.StatusCode)
	}
	return p
}

func (p *usagePerson) get(path string) (int, http.Header, string) {
	p.t.Helper()
	res, err := p.c.Get(p.s.url + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// page fetches a console page that must answer 200.
func (p *usagePerson) page(path string) string {
	p.t.Helper()
	code, _, body := p.get(path)
	if code != http.StatusOK {
		p.t.Fatalf("%s answered %d: %.2000s", path, code, body)
	}
	return body
}

// apiGet calls the account API with a key.
func (s *usageSite) apiGet(path, key string) (int, http.Header, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// figure reads an element's text by id (the totals cards).
func figure(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `">([^<]*)<`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no #%s in the page", id)
	}
	return m[1]
}

// tableRow reads a row of the model or key table: jobs, charged, refunded, net as shown.
func tableRow(t *testing.T, page, table, name string) []string {
	t.Helper()
	i := strings.Index(page, `id="`+table+`"`)
	if i < 0 {
		t.Fatalf("no table %s", table)
	}
	sec := page[i:]
	sec = sec[:strings.Index(sec, "</table>")]
	j := strings.Index(sec, `data-name="`+name+`"`)
	if j < 0 {
		t.Fatalf("table %s has no row %s:\n%s", table, name, sec)
	}
	row := sec[j:]
	row = row[:strings.Index(row, "</tr>")]
	var out []string
	for _, m := range regexp.MustCompile(`<td class="num[^"]*">([^<]*)</td>`).FindAllStringSubmatch(row, -1) {
		out = append(out, m[1])
	}
	return out
}

func cr(n int64) string { return fmt.Sprintf("%d", n) } // the test's figures stay under 1,000

// TestACC15_ConsoleUsagePage proves the usage page against charges and refunds made through
// real jobs: per-window totals, a bar for each day with spend, spend per model and per key
// with totals, the empty state, the API's windows and refusals, and that another account's
// spend never appears.
func TestACC15_ConsoleUsagePage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s := newUsageSite(t, db, 0)
		key1 := s.account("acct_cu")
		key2 := s.mint("acct_cu")
		other := s.account("acct_cu_other")
		s.account("acct_cu_idle")

		s.clock.Set(time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC))
		oct := s.run(key1, "october")
		s.clock.Set(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
		a1 := s.run(key1, "first")
		s.clock.Set(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
		a2 := s.run(key1, "second")
		failed := s.run(key2, "fail this one")
		b1 := s.run(key2, "third")
		theirs := s.run(other, "not yours")
		if failed.Outcome != jobs.Failed || failed.Reserved == 0 || a1.Charged == 0 {
			t.Fatalf("fixture: failed %+v, a1 charged %d", failed, a1.Charged)
		}
		s.clock.Set(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
		p := s.signIn("acct_cu")

		page := p.page("/console/usage")
		charged := a1.Charged + a2.Charged + failed.Reserved + b1.Charged
		net := a1.Charged + a2.Charged + b1.Charged
		if figure(t, page, "total-net") != cr(net) || figure(t, page, "total-charged") != cr(charged) ||
			figure(t, page, "total-refunded") != cr(failed.Reserved) || figure(t, page, "total-jobs") != "4" {
			t.Fatalf("totals: net %s charged %s refunded %s jobs %s; want %d %d %d 4", figure(t, page, "total-net"),
				figure(t, page, "total-charged"), figure(t, page, "total-refunded"), figure(t, page, "total-jobs"), net, charged, failed.Reserved)
		}
		// One bar per day with spend, carrying its net; none for the other days of November.
		bars := regexp.MustCompile(`<rect class="day-bar" data-day="([^"]+)" data-net="([^"]+)"`).FindAllStringSubmatch(page, -1)
		if len(bars) != 2 || bars[0][1] != "2026-11-20" || bars[0][2] != cr(a1.Charged) ||
			bars[1][1] != "2026-11-21" || bars[1][2] != cr(a2.Charged+b1.Charged) {
			t.Fatalf("day bars = %v", bars)
		}
		// Gridlines at whole figures up to the scale (here 1 and 2), labelled, and the axis named.
		maxNet := max(a1.Charged, a2.Charged+b1.Charged)
		grid := regexp.MustCompile(`<line class="grid"[^>]*/>\s*<text[^>]*>([0-9,]+)</text>`).FindAllStringSubmatch(page, -1)
		if len(grid) == 0 || len(grid) > 4 || grid[len(grid)-1][1] != cr(maxNet) || !strings.Contains(page, "credits a day (net)") {
			t.Fatalf("gridlines %v for a scale of %d", grid, maxNet)
		}
		if got := tableRow(t, page, "usage-models", "image-lite"); strings.Join(got, " ") !=
			fmt.Sprintf("4 %d %d %d", charged, failed.Reserved, net) {
			t.Fatalf("image-lite row = %v", got)
		}
		if got := tableRow(t, page, "usage-keys", a1.KeyID); strings.Join(got, " ") !=
			fmt.Sprintf("2 %d 0 %d", a1.Charged+a2.Charged, a1.Charged+a2.Charged) {
			t.Fatalf("key %s row = %v", a1.KeyID, got)
		}
		if got := tableRow(t, page, "usage-keys", b1.KeyID); strings.Join(got, " ") !=
			fmt.Sprintf("2 %d %d %d", failed.Reserved+b1.Charged, failed.Reserved, b1.Charged) {
			t.Fatalf("key %s row = %v", b1.KeyID, got)
		}
		if !strings.Contains(page, `href="/console/usage/export.csv?window=month&amp;granularity=day"`) {
			t.Fatalf("no export link for the window")
		}
		// Another account's spend never appears, in any window.
		for _, w := range []string{"month", "last_month", "12m"} {
			pg := p.page("/console/usage?window=" + w)
			if strings.Contains(pg, theirs.KeyID) || strings.Contains(pg, "acct_cu_other") {
				t.Fatalf("window %s shows another account's spend", w)
			}
		}
		// last_month holds October's job alone; 12m both months.
		last := p.page("/console/usage?window=last_month")
		if figure(t, last, "total-net") != cr(oct.Charged) || !strings.Contains(last, `data-day="2026-10-15"`) {
			t.Fatalf("last_month: net %s", figure(t, last, "total-net"))
		}
		if y := p.page("/console/usage?window=12m"); figure(t, y, "total-net") != cr(net+oct.Charged) ||
			!strings.Contains(y, `<option value="12m" selected>`) {
			t.Fatalf("12m: net %s", figure(t, y, "total-net"))
		}
		// The API's refusals, with their statuses and messages.
		if code, _, body := p.get("/console/usage?window=week"); code != http.StatusBadRequest || !strings.Contains(body, "is not a usage window") {
			t.Fatalf("window=week answered %d", code)
		}
		if code, _, body := p.get("/console/usage?window=24m"); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "at most 12 months") {
			t.Fatalf("window=24m answered %d", code)
		}
		// An account with no spend is told what to do.
		idle := s.signIn("acct_cu_idle").page("/console/usage")
		if !strings.Contains(idle, `id="usage-empty"`) || !strings.Contains(idle, `href="/console/playground"`) || strings.Contains(idle, "day-bar") {
			t.Fatalf("empty state missing")
		}
		// The other account sees its own spend only.
		op := s.signIn("acct_cu_other").page("/console/usage")
		if figure(t, op, "total-net") != cr(theirs.Charged) || strings.Contains(op, a1.KeyID) || strings.Contains(op, b1.KeyID) {
			t.Fatalf("the other account's page shows spend not its own")
		}
	})
}

// TestACC15_ConsoleUsageExportIsTheAPIExport proves the console's download is the very file
// GET /v1/usage/export answers for the same window and granularity: same bytes, type and file
// name; and that it holds the signed-in account's rows only.
func TestACC15_ConsoleUsageExportIsTheAPIExport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s := newUsageSite(t, db, 0)
		s.srv.Usage().PageRows = 1 // every file below takes several pages
		key := s.account("acct_cx")
		key2 := s.mint("acct_cx")
		other := s.account("acct_cx_other")
		s.clock.Set(time.Date(2026, 10, 2, 9, 0, 0, 0, time.UTC))
		s.run(key, "october")
		s.clock.Set(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
		s.run(key, "first")
		s.run(key2, "fail here")
		s.run(key2, "second")
		theirs := s.run(other, "not yours")
		s.clock.Set(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
		p := s.signIn("acct_cx")

		for _, w := range []string{"month", "last_month", "3m", "12m"} {
			for _, g := range []string{"day", "job"} {
				q := "?window=" + w + "&granularity=" + g
				code, hd, csvBody := p.get("/console/usage/export.csv" + q)
				acode, ahd, apiBody := s.apiGet("/v1/usage/export"+q, key)
				if code != http.StatusOK || acode != http.StatusOK {
					t.Fatalf("%s: console %d, API %d %s", q, code, acode, apiBody)
				}
				if csvBody != apiBody {
					t.Fatalf("%s: the console's file differs from the API's:\n%s\n---\n%s", q, csvBody, apiBody)
				}
				for _, h := range []string{"Content-Type", "Content-Disposition"} {
					if hd.Get(h) != ahd.Get(h) {
						t.Fatalf("%s: %s %q, API %q", q, h, hd.Get(h), ahd.Get(h))
					}
				}
				if strings.Contains(csvBody, theirs.KeyID) || strings.Contains(csvBody, theirs.ID) {
					t.Fatalf("%s: another account's rows in the file", q)
				}
				lines := strings.Split(strings.TrimSpace(csvBody), "\n")
				if w == "month" && g == "day" && (len(lines) != 3 || !strings.HasPrefix(lines[0], "date,key_id,model,jobs,") ||
					!strings.Contains(lines[1], ",image-lite,")) {
					t.Fatalf("month file:\n%s", csvBody)
				}
				if w == "month" && g == "job" && len(lines) != 5 { // header, three charges, one refund
					t.Fatalf("month per-job file:\n%s", csvBody)
				}
			}
		}
		if cd := func() string {
			_, hd, _ := p.get("/console/usage/export.csv?window=last_month")
			return hd.Get("Content-Disposition")
		}(); cd !=
			`attachment; filename="usage-acct_cx-last_month.csv"` {
			t.Fatalf("default granularity's file name %q", cd)
		}
		// The granularity and window refusals are the API's.
		if code, _, _ := p.get("/console/usage/export.csv?granularity=hour"); code != http.StatusBadRequest {
			t.Fatalf("granularity=hour answered %d", code)
		}
		if code, _, _ := p.get("/console/usage/export.csv?window=13m"); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("window=13m answered %d", code)
		}
		// Signed out, the download sends the person to sign in, never a file.
		anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := anon.Get(s.url + "/console/usage/export.csv?window=month")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Content-Disposition") != "" {
			t.Fatalf("signed out export answered %d %q", res.StatusCode, res.Header.Get("Content-Disposition"))
		}
	})
}

// TestACC15_ConsoleUsageExportTooLarge proves the console refuses an export past the row limit
// of one file with the API's export_too_large: a 413 page with the message asking for a smaller
// window, and nothing downloaded (no attachment, no row); a window that fits is served.
func TestACC15_ConsoleUsageExportTooLarge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s := newUsageSite(t, db, 2)
		key := s.account("acct_cbig")
		s.clock.Set(time.Date(2026, 10, 3, 9, 0, 0, 0, time.UTC))
		s.run(key, "october")
		for d := 1; d <= 3; d++ {
			s.clock.Set(time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC))
			s.run(key, fmt.Sprintf("day %d", d))
		}
		s.clock.Set(time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC))
		p := s.signIn("acct_cbig")
		for _, q := range []string{"?window=month", "?window=3m&granularity=job"} {
			code, hd, body := p.get("/console/usage/export.csv" + q)
			if code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%s answered %d", q, code)
			}
			if hd.Get("Content-Disposition") != "" || !strings.HasPrefix(hd.Get("Content-Type"), "text/html") {
				t.Fatalf("%s: refusal sent as %q %q", q, hd.Get("Content-Type"), hd.Get("Content-Disposition"))
			}
			if !strings.Contains(body, "would exceed one file") || !strings.Contains(body, "smaller window") || strings.Contains(body, "date,key_id") {
				t.Fatalf("%s: refusal page %.2000s", q, body)
			}
			// The API refuses the same window alike.
			if acode, _, abody := s.apiGet("/v1/usage/export"+q, key); acode != http.StatusRequestEntityTooLarge || !strings.Contains(abody, `"export_too_large"`) {
				t.Fatalf("API %s answered %d %s", q, acode, abody)
			}
		}
		// The page still shows the month, and last_month's one row downloads.
		if pg := p.page("/console/usage"); figure(t, pg, "total-jobs") != "3" {
			t.Fatalf("page jobs %s", figure(t, pg, "total-jobs"))
		}
		if code, _, body := p.get("/console/usage/export.csv?window=last_month"); code != http.StatusOK || strings.Count(body, "\n") != 2 {
			t.Fatalf("last_month answered %d:\n%s", code, body)
		}
	})
}
