package console_test

import (
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	jobRowIDs = regexp.MustCompile(`<tr data-job="([^"]+)"`)
	nextLink  = regexp.MustCompile(`<a href="([^"]+)" id="next-page"`)
	prevLink  = regexp.MustCompile(`<a href="([^"]+)" id="prev-page"`)
	thumbImg  = regexp.MustCompile(`<td class="thumb"><img src="[^"]+"`)
)

func rowIDs(page string) []string {
	var out []string
	for _, m := range jobRowIDs.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// The jobs list as a person pages through it: a total of the jobs its filters match, each row
// with the start of its prompt and a thumbnail of its picture, an older page and a link back
// to the newer one that shows the same rows again.
func TestConsoleJobsListTotalPromptThumbAndPreviousPage(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_pages", 1_000_000)
	const n = 52 // a page is 50
	for i := range n {
		p.run("image-lite", map[string]string{"positivePrompt": "a lighthouse number " + strconv.Itoa(i), "width": "128", "height": "128", "steps": "10"})
	}
	_, first := p.get("/console/jobs")
	if !strings.Contains(first, `<p class="muted" id="jobs-total">52 jobs · page 1.</p>`) {
		t.Errorf("no total on the first page:\n%.3000s", first[strings.Index(first, "<h1>"):])
	}
	ids := rowIDs(first)
	if len(ids) != 50 || len(thumbImg.FindAllString(first, -1)) != 50 || !strings.Contains(first, `<div class="prompt muted">a lighthouse number 51</div>`) {
		t.Fatalf("the first page has %d rows, %d thumbnails, and its newest prompt: %v", len(ids), len(thumbImg.FindAllString(first, -1)),
			strings.Contains(first, "a lighthouse number 51"))
	}
	if prevLink.MatchString(first) {
		t.Error("the first page links to a newer page")
	}
	code, second := p.get(html.UnescapeString(match(t, nextLink, first)))
	if code != http.StatusOK || len(rowIDs(second)) != 2 || !strings.Contains(second, "52 jobs · page 2.") || nextLink.MatchString(second) {
		t.Fatalf("the second page (%d): rows %v\n%.2000s", code, rowIDs(second), second[strings.Index(second, "<h1>"):])
	}
	_, back := p.get(html.UnescapeString(match(t, prevLink, second)))
	if got := rowIDs(back); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("the previous-page link shows other rows: %v", got)
	}
	if _, page := p.get("/console/jobs?model=image-4b"); !strings.Contains(page, "0 jobs match these filters") {
		t.Error("a filter matching nothing does not say 0 jobs")
	}
}

// The overview as a person opens it: this month's spend with a bar for today, the newest jobs
// with their prompt and picture, and a copy button on the first call's curl line.
func TestConsoleOverviewSpendRecentJobsAndCopy(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_home", 100_000)
	_, before := p.get("/console/")
	if strings.Contains(before, `id="recent-jobs"`) {
		t.Error("an account without jobs lists recent jobs")
	}
	id := p.run("image-lite", map[string]string{"positivePrompt": "a quiet harbour", "width": "128", "height": "128", "steps": "10"})
	j := p.settle(id)
	_, home := p.get("/console/")
	for _, want := range []string{
		`<div class="chart small-chart" id="home-spend">`,
		`<strong id="home-spend-total">` + strconv.FormatInt(j.Charged, 10) + ` credit`,
		`<rect class="day-bar" data-day="` + j.CreatedAt.UTC().Format("2006-01-02") + `"`,
		`<tr data-job="` + id + `">`,
		`<div class="prompt muted">a quiet harbour</div>`,
		`<button type="button" class="copy" data-copy="first-call" id="copy-first-call">Copy</button>`,
	} {
		if !strings.Contains(home, want) {
			t.Errorf("the overview lacks %s", want)
		}
	}
	if !thumbImg.MatchString(home) {
		t.Error("the recent job has no thumbnail")
	}
	if strings.Contains(home, "<script src=\"http") || strings.Contains(home, "src=\"//") {
		t.Error("the overview loads a script from elsewhere")
	}
}
