package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
)

var (
	idemField = regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`)
	imgSrc    = regexp.MustCompile(`<img src="([^"]+)" alt="output`)
	audioSrc  = regexp.MustCompile(`<audio controls preload="metadata" src="([^"]+)"`)
	jobLink   = regexp.MustCompile(`^/console/jobs/([^?]+)\?submitted=1$`)
)

// run fills the playground's form for model with fields and sends it; it answers the job id
// the console redirected to, once the job has settled.
func (p *person) run(model string, fields map[string]string) string {
	p.t.Helper()
	code, page := p.get("/console/playground?model=" + model)
	if code != http.StatusOK {
		p.t.Fatalf("playground %s: %d", model, code)
	}
	form := url.Values{"csrf": {p.csrf}, "model": {model}, "idempotency_key": {match(p.t, idemField, page)}}
	for k, v := range fields {
		form.Set("in."+k, v)
	}
	res := p.post("/console/playground", form)
	b := body(res)
	if res.StatusCode != http.StatusSeeOther {
		p.t.Fatalf("playground submit of %s answered %d: %.3000s", model, res.StatusCode, b)
	}
	id := match(p.t, jobLink, res.Header.Get("Location"))
	p.settle(id)
	// The same form sent again is the same request: the same job, not a second charge, and
	// the page it leads to says so.
	again := p.post("/console/playground", form)
	body(again)
	if again.StatusCode != http.StatusSeeOther || again.Header.Get("Location") != res.Header.Get("Location")+"&replayed=1" {
		p.t.Fatalf("the form sent twice answered %d %s, first %s", again.StatusCode, again.Header.Get("Location"), res.Header.Get("Location"))
	}
	if _, page := p.get(again.Header.Get("Location")); !strings.Contains(page, "This form was already sent: showing the run it started.") {
		p.t.Fatalf("the job page a resent form leads to does not say it was already sent: %.2000s", page)
	}
	if _, page := p.get(res.Header.Get("Location")); strings.Contains(page, "This form was already sent") {
		p.t.Fatal("the job page of a first send says it was already sent")
	}
	return id
}

func (p *person) settle(id string) jobs.Job {
	p.t.Helper()
	js := p.s.srv.Jobs()
	j, err := js.GetByID(context.Background(), p.account(), id)
	if err != nil {
		p.t.Fatal(err)
	}
	j, timedOut, err := js.Wait(context.Background(), p.account(), j.RequestID, 60*time.Second)
	if err != nil || timedOut {
		p.t.Fatalf("job %s did not settle: %v", id, err)
	}
	return j
}

func (p *person) account() string {
	_, home := p.get("/console/")
	return match(p.t, regexp.MustCompile(`class="account" title="account id">([^<]+)<`), home)
}

// TestKEY15_ConsoleJobsAndPlayground: a signed-in person runs an image model and an audio model
// from the playground (a form generated from the contract, priced before it is sent, charged
// once through the ledger under the console's key even when sent twice), then finds both jobs
// in the list, narrows it by model and status, and opens each: an image preview and an audio
// player whose signed links serve the files, the charge, the history and the inputs. Another
// account's person is told these jobs do not exist.
func TestKEY15_ConsoleJobsAndPlayground(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_console", 100000)
	ctx := context.Background()

	// The form follows the contract: required prompt first, enumerations as choices.
	code, page := p.get("/console/playground?model=image-4b")
	if code != http.StatusOK || !strings.Contains(page, `name="in.positivePrompt"`) || !strings.Contains(page, `<option value="PNG"`) ||
		!strings.Contains(page, `name="in.width"`) || !strings.Contains(page, "Fill in the form to see the price.") {
		t.Fatalf("playground form %d: %.3000s", code, page)
	}
	// The quote, asked as the fields change, is the catalogue's price; without the form's
	// token it is refused.
	quote := url.Values{"csrf": {p.csrf}, "model": {"image-4b"}, "in.positivePrompt": {"a lighthouse"}, "in.width": {"256"},
		"in.height": {"256"}, "in.steps": {"2"}}
	res := p.post("/console/playground/quote", quote)
	var q struct {
		OK      bool   `json:"ok"`
		Credits int64  `json:"credits"`
		Unit    string `json:"unit"`
	}
	if err := json.Unmarshal([]byte(body(res)), &q); err != nil || res.StatusCode != http.StatusOK || !q.OK || q.Credits <= 0 {
		t.Fatalf("quote %d %+v %v", res.StatusCode, q, err)
	}
	quote.Del("csrf")
	if res := p.post("/console/playground/quote", quote); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a quote without the form's token answered %d", res.StatusCode)
	}
	bad := url.Values{"csrf": {p.csrf}, "model": {"image-4b"}, "in.positivePrompt": {"x"}, "in.width": {"99999"}}
	res = p.post("/console/playground/quote", bad)
	if b := body(res); !strings.Contains(b, `"ok":false`) || !strings.Contains(b, "Width: Input should be less than or equal to 2048") {
		t.Fatalf("quote of a width out of bounds: %s", b)
	}

	img := p.run("image-4b", map[string]string{"positivePrompt": "a lighthouse at dusk", "width": "256", "height": "256", "steps": "2"})
	song := p.run("music-turbo", map[string]string{"positivePrompt": "a calm piano piece", "duration": "30", "steps": "1", "outputFormat": "WAV"})

	// Charged once each, through the ledger, under the console's key.
	a, err := s.auth.Account(ctx, "acct_console")
	if err != nil {
		t.Fatal(err)
	}
	ji := p.settle(img)
	jm := p.settle(song)
	if ji.KeyID != auth.ConsoleKeyIDOf("acct_console") || ji.Outcome != jobs.Succeeded || jm.Outcome != jobs.Succeeded || ji.Charged != q.Credits ||
		a.Balance != 100000-ji.Charged-jm.Charged {
		t.Fatalf("image %+v music %+v balance %d", ji, jm, a.Balance)
	}
	w, err := ledger.ParseWindow("month", time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	usage, err := ledger.NewUsage(s.db).ByKey(ctx, "acct_console", w)
	if err != nil || len(usage) != 1 || usage[0].KeyID != auth.ConsoleKeyIDOf("acct_console") || usage[0].Jobs != 2 {
		t.Fatalf("usage %+v %v", usage, err)
	}

	// The job page: an image preview whose signed link serves the picture, the charge, the
	// history, the inputs and the event.
	code, page = p.get("/console/jobs/" + img)
	if code != http.StatusOK || !strings.Contains(page, "a lighthouse at dusk") || !strings.Contains(page, `id="job-event">evt_`+img+`_succeeded`) ||
		!regexp.MustCompile(`id="job-charged">[0-9,]+ credits?\b`).MatchString(page) || !strings.Contains(page, ">succeeded<") {
		t.Fatalf("image job page %d: %.4000s", code, page)
	}
	fetch(t, match(t, imgSrc, page), "image/")
	code, page = p.get("/console/jobs/" + song)
	if code != http.StatusOK {
		t.Fatalf("music job page %d", code)
	}
	fetch(t, match(t, audioSrc, page), "audio/")

	// The live view answers JSON with the outputs once settled.
	code, live := p.get("/console/jobs/" + img + "/live")
	if code != http.StatusOK || !strings.Contains(live, `"settled":true`) || !strings.Contains(live, `"kind":"image"`) {
		t.Fatalf("live %d %s", code, live)
	}

	// The list shows both; filters narrow it.
	for path, want := range map[string][]string{
		"/console/jobs":                                                {img, song},
		"/console/jobs?model=image-4b":                                 {img},
		"/console/jobs?status=succeeded&model=music-turbo":             {song},
		"/console/jobs?status=failed":                                  {},
		"/console/jobs?from=" + time.Now().UTC().Format(time.DateOnly): {img, song},
		"/console/jobs?to=2020-01-01":                                  {},
	} {
		code, page := p.get(path)
		got := regexp.MustCompile(`<tr data-job="([^"]+)"`).FindAllStringSubmatch(page, -1)
		if code != http.StatusOK || len(got) != len(want) {
			t.Fatalf("%s: %d, rows %v, want %v", path, code, got, want)
		}
		for i, w := range want {
			if got[len(want)-1-i][1] != w { // newest first
				t.Fatalf("%s: rows %v, want %v newest first", path, got, want)
			}
		}
	}
	if code, _ := p.get("/console/jobs?status=nonsense"); code != http.StatusBadRequest {
		t.Fatalf("an unknown status filter answered %d", code)
	}
	// A refused filter is the form again, with the reason and what was typed, and no list
	// that looks filtered but is not.
	for path, want := range map[string]string{
		"/console/jobs?from=2026-13-45&model=image-4b": `value="2026-13-45"`,
		"/console/jobs?to=abc":                         `value="abc"`,
		"/console/jobs?model=nope":                     `There is no model &#34;nope&#34;`,
	} {
		code, page := p.get(path)
		if code != http.StatusBadRequest || !strings.Contains(page, want) || strings.Contains(page, img) || strings.Contains(page, `id="jobs-total"`) {
			t.Fatalf("%s: %d, want 400 with %s and no list:\n%s", path, code, want, page)
		}
	}

	// Another account's person: not found, on the page and on the live view.
	o := s.signIn(t, "acct_other", 100)
	for _, path := range []string{"/console/jobs/" + img, "/console/jobs/" + img + "/live"} {
		if code, _ := o.get(path); code != http.StatusNotFound {
			t.Fatalf("another account's %s answered %d", path, code)
		}
	}
	if _, page := o.get("/console/jobs"); strings.Contains(page, img) {
		t.Fatal("another account's list shows the job")
	}
}

// TestKEY15_PlaygroundRefusals: the playground answers as the API would, with the catalogue's
// codes and nothing charged: a contract violation names the field, a balance too small is
// insufficient_credits, a product the operator paused is api_disabled, and a model that does
// not exist is not found.
func TestKEY15_PlaygroundRefusals(t *testing.T) {
	s := newSite(t, func(c *server.Config, _ *server.Deps) { c.DisableProduct = []string{"music"} })
	p := s.signIn(t, "acct_poor", 0)
	_, page := p.get("/console/playground?model=image-4b")
	form := url.Values{"csrf": {p.csrf}, "model": {"image-4b"}, "idempotency_key": {match(t, idemField, page)},
		"in.positivePrompt": {"x"}, "in.width": {"99999"}, "in.height": {"256"}}
	res := p.post("/console/playground", form)
	if b := body(res); res.StatusCode != http.StatusBadRequest || !strings.Contains(b, "invalid_input") || !strings.Contains(b, "width") ||
		!strings.Contains(b, `>x</textarea>`) {
		t.Fatalf("invalid input answered %d: %.3000s", res.StatusCode, b)
	}
	form.Set("in.width", "256")
	res = p.post("/console/playground", form)
	if b := body(res); res.StatusCode != http.StatusPaymentRequired || !strings.Contains(b, "insufficient_credits") {
		t.Fatalf("no credits answered %d: %.3000s", res.StatusCode, b)
	}
	_, page = p.get("/console/playground?model=music-turbo")
	paused := url.Values{"csrf": {p.csrf}, "model": {"music-turbo"}, "idempotency_key": {match(t, idemField, page)}, "in.positivePrompt": {"a song"}}
	res = p.post("/console/playground", paused)
	if b := body(res); res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, "api_disabled") {
		t.Fatalf("a paused product answered %d: %.3000s", res.StatusCode, b)
	}
	form.Set("model", "no-such-model")
	if res := p.post("/console/playground", form); res.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown model answered %d", res.StatusCode)
	}
	if js, err := s.srv.Jobs().Search(context.Background(), "acct_poor", jobs.Search{}); err != nil || len(js) != 0 {
		t.Fatalf("refused submissions left jobs: %v %v", js, err)
	}
	// A free plan runs no job: the run is refused as the API refuses it (403, never 429), not
	// as an account whose jobs in flight are at their limit.
	free := s.signInOn(t, "acct_free", auth.Free, 1000)
	_, page = free.get("/console/playground?model=image-4b")
	form = url.Values{"csrf": {free.csrf}, "model": {"image-4b"}, "idempotency_key": {match(t, idemField, page)},
		"in.positivePrompt": {"x"}, "in.width": {"256"}, "in.height": {"256"}}
	res = free.post("/console/playground", form)
	if b := body(res); res.StatusCode != http.StatusForbidden || !strings.Contains(b, "plan_has_no_api_generate") {
		t.Fatalf("a free plan's run answered %d: %.3000s", res.StatusCode, b)
	}
}

func fetch(t *testing.T, link, kind string) {
	t.Helper()
	res, err := http.Get(strings.ReplaceAll(link, "&amp;", "&"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(body(res))
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), kind) || n == 0 {
		t.Fatalf("output %s: %d %s %d bytes", link, res.StatusCode, res.Header.Get("Content-Type"), n)
	}
}

// stepRunner reports a log line and half its progress, then waits to be released.
type stepRunner struct {
	reported chan struct{}
	release  chan struct{}
}

func (r *stepRunner) Run(ctx context.Context, _ runners.Job, env runners.Env) (runners.Result, error) {
	env.Report.Log("info", "halfway through the picture")
	env.Report.Progress(0.5)
	r.reported <- struct{}{}
	select {
	case <-r.release:
		return runners.Result{Document: map[string]any{"ok": true}, Done: 1}, nil
	case <-ctx.Done():
		return runners.Result{}, ctx.Err()
	}
}

// TestKEY15_ConsoleJobLive: while a playground run is under way its page shows it running and
// its live view answers the progress and the logs the runner reported; once it settles the
// live view says so and the page shows the outcome.
func TestKEY15_ConsoleJobLive(t *testing.T) {
	rn := &stepRunner{reported: make(chan struct{}, 1), release: make(chan struct{})}
	s := newSite(t, func(_ *server.Config, d *server.Deps) {
		d.Runners = func(*catalog.Catalog) runners.Registry { return runners.Registry{"image-4b": rn} }
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(rn.release)
		}
	})
	p := s.signIn(t, "acct_live", 1000)
	_, page := p.get("/console/playground?model=image-4b")
	res := p.post("/console/playground", url.Values{"csrf": {p.csrf}, "model": {"image-4b"}, "idempotency_key": {match(t, idemField, page)},
		"in.positivePrompt": {"a lighthouse"}, "in.width": {"256"}, "in.height": {"256"}})
	body(res)
	id := match(t, jobLink, res.Header.Get("Location"))
	<-rn.reported
	code, page := p.get("/console/jobs/" + id)
	if code != http.StatusOK || !strings.Contains(page, `data-settled="false"`) || !strings.Contains(page, `id="job-progress"`) {
		t.Fatalf("running job page %d: %.3000s", code, page)
	}
	var live struct {
		State    string          `json:"state"`
		Settled  bool            `json:"settled"`
		Progress float64         `json:"progress"`
		Logs     []jobs.LogLine  `json:"logs"`
		Outputs  []any           `json:"outputs"`
		Error    *string         `json:"error_code"`
		Result   json.RawMessage `json:"result"`
	}
	code, raw := p.get("/console/jobs/" + id + "/live")
	if err := json.Unmarshal([]byte(raw), &live); err != nil || code != http.StatusOK || live.State != "running" || live.Settled ||
		live.Progress != 0.5 || !strings.Contains(fmt.Sprint(live.Logs), "halfway through the picture") {
		t.Fatalf("live while running %d: %s", code, raw)
	}
	close(rn.release)
	released = true
	p.settle(id)
	code, raw = p.get("/console/jobs/" + id + "/live")
	if code != http.StatusOK || !strings.Contains(raw, `"state":"succeeded","settled":true`) {
		t.Fatalf("live once settled %d: %s", code, raw)
	}
	// The playground shows the balance the run left, as /v1/me does, not the one it opened with.
	var after struct {
		Charged int64 `json:"credits_charged"`
		Balance int64 `json:"balance"`
	}
	if err := json.Unmarshal([]byte(raw), &after); err != nil || after.Charged == 0 || after.Balance != 1000-after.Charged {
		t.Fatalf("the live view's balance after a charge of %d: %s", after.Charged, raw)
	}
	if _, page := p.get("/console/jobs/" + id); !strings.Contains(page, `data-settled="true"`) || !strings.Contains(page, "halfway through the picture") {
		t.Fatalf("settled job page: %.3000s", page)
	}
}
