package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// BenchmarkConsolePages measures the pages a person opens most with 10,000 jobs in the account
// on SQLite: the jobs list (first page, a page deep in the history, a model filter), a job's
// page with its output, and the overview. Each is reported as p50 and p99 in milliseconds, and
// as the ratio of its p50 to a bare net/http handler's measured in the same run over the same
// kind of connection. The budget is 50 ms a page; this is a benchmark, not a timed test:
//
//	go test -run '^$' -bench ConsolePages -benchtime 200x ./internal/console/
func BenchmarkConsolePages(b *testing.B) {
	s := newSite(b)
	p := s.signIn(b, "acct_bench", 1_000_000)
	ids := seedJobs(b, s.db, "acct_bench", 10_000)
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><p>ok</p>")
	}))
	b.Cleanup(bare.Close)
	// A cursor half way through the history: keyset pages cost the same however deep.
	_, deep := p.get("/console/jobs?after=" + fmt.Sprint(benchT0.Add(5000*time.Second).UnixMicro()) + ".photo_zzz")
	if len(deep) == 0 {
		b.Fatal("no deep page")
	}
	pages := []benchPage{
		{"bare", bare.URL + "/"},
		{"jobs", s.url + "/console/jobs"},
		{"jobs-deep", s.url + "/console/jobs?after=" + fmt.Sprint(benchT0.Add(5000*time.Second).UnixMicro()) + ".photo_zzz"},
		{"jobs-model", s.url + "/console/jobs?model=music-turbo&status=succeeded"},
		{"job", s.url + "/console/jobs/" + ids[len(ids)/2]},
		{"home", s.url + "/console/"},
	}
	measurePages(b, p.c, pages)
}

// benchPage is a page a benchmark opens, by name.
type benchPage struct{ name, url string }

// measurePages opens each page once to warm connections and caches, then b.N times in turn,
// and reports each page's p50 and p99 in milliseconds; when the first page is "bare", each
// other page's p50 also as a ratio of the bare handler's.
func measurePages(b *testing.B, c *http.Client, pages []benchPage) {
	b.Helper()
	lat := make([][]time.Duration, len(pages))
	get := func(i int) {
		start := time.Now()
		res, err := c.Get(pages[i].url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("%s answered %d", pages[i].name, res.StatusCode)
		}
		lat[i] = append(lat[i], time.Since(start))
	}
	for i := range pages {
		get(i)
		lat[i] = lat[i][:0]
	}
	b.ResetTimer()
	for range b.N {
		for i := range pages {
			get(i)
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, q float64) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	bareP50 := 0.0
	if pages[0].name == "bare" {
		bareP50 = pct(lat[0], 0.5)
	}
	for i, pg := range pages {
		b.ReportMetric(pct(lat[i], 0.5), pg.name+"-p50-ms")
		b.ReportMetric(pct(lat[i], 0.99), pg.name+"-p99-ms")
		if i > 0 && bareP50 > 0 {
			b.ReportMetric(pct(lat[i], 0.5)/bareP50, pg.name+"-x-bare")
		}
	}
	b.ReportMetric(0, "ns/op") // the per-page figures above are the result
}

var benchT0 = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

// seedJobs writes n settled jobs, one a second, alternating image and music, each with an
// input, logs and a stored output, as the engine would have left them.
func seedJobs(b *testing.B, db *sqlstore.DB, account string, n int) []string {
	b.Helper()
	ids := make([]string, 0, n)
	ctx := context.Background()
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		err := sqlstore.Jobs{DB: db}.InTx(ctx, func(tx jobs.Tx) error {
			for i := lo; i < min(lo+batch, n); i++ {
				at := benchT0.Add(time.Duration(i) * time.Second)
				done := at.Add(2 * time.Second)
				model, product, ct := "image-4b", "photo", "image/jpeg"
				if i%2 == 1 {
					model, product, ct = "music-turbo", "music", "audio/mpeg"
				}
				key := fmt.Sprintf("bench-%05d", i)
				j := jobs.Job{ID: product + "_" + key, AccountID: account, KeyID: auth.ConsoleKeyIDOf(account), RequestID: "req-" + key, Model: model,
					Product: product, IdempotencyKey: key, Input: []byte(`{"positivePrompt":"a lighthouse at dusk","width":256,"height":256}`),
					Status: jobs.Completed, Outcome: jobs.Succeeded, Quoted: 10, Reserved: 10, Charged: 10, Priority: jobs.Normal,
					Dispatched: true, CreatedAt: at, StartedAt: &at, FinishedAt: &done, Attempts: 1, Progress: 1,
					Logs: []jobs.LogLine{{Message: "started", Level: "info", Source: "runner", Timestamp: at}},
					Result: &runners.Result{Document: map[string]any{"images": []any{map[string]any{"storage_key": "outputs/" + key + ".jpg"}}},
						Files: []runners.File{{Key: "outputs/" + key + ".jpg", ContentType: ct, Bytes: 12345}}, Done: 1}}
				if err := tx.InsertJobs(ctx, []jobs.Job{j}); err != nil {
					return err
				}
				ids = append(ids, j.ID)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return ids
}
