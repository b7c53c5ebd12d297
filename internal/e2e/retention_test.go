package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestERR_ExpiredOutputsAnswer410 proves issue 30 item 11 over HTTP: with outputs kept 30
// days, a job's result and assets read back while they are kept; 31 days on, the sweep has
// deleted the bytes and both answer 410 expired (reason output_expired) saying how long
// outputs are kept, while the job's record still reads (jobs and ledger entries are kept).
func TestERR_ExpiredOutputsAnswer410(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		bucket := blobs.NewMemory()
		keep := blobs.Retention{Outputs: 30 * 24 * time.Hour}
		m := newModelsHarnessOn(t, db, bucket, func(c *server.Config) { c.Retain = keep })
		r := m.submit("image-lite", "wait=60", `{"positivePrompt":"a fox"}`)
		if r.Code != http.StatusOK || r.str("status") != "COMPLETED" {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		j := m.job(r.str("request_id"))
		if j.Result == nil || len(j.Result.Files) == 0 {
			t.Fatalf("the job stored no output: %+v", j.Result)
		}
		assets := m.api.URL + "/v1/jobs/" + j.ID + "/assets"
		if res := m.call(http.MethodGet, r.str("response_url"), ""); res.Code != http.StatusOK {
			t.Fatalf("result read while kept: %d %s", res.Code, res.Raw)
		}
		if a := m.call(http.MethodGet, assets, ""); a.Code != http.StatusOK {
			t.Fatalf("assets while kept: %d %s", a.Code, a.Raw)
		}

		m.clock.Advance(31 * 24 * time.Hour)
		sweep := &blobs.Sweeper{Bucket: bucket, Retention: keep, Now: func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }, Log: quietLog()}
		if n, err := sweep.Sweep(context.Background()); err != nil || n != len(j.Result.Files) {
			t.Fatalf("sweep deleted %d of %d files: %v", n, len(j.Result.Files), err)
		}
		if _, err := bucket.Stat(context.Background(), j.Result.Files[0].Key); !errors.Is(err, blobs.ErrNotFound) {
			t.Fatalf("the output is still stored: %v", err)
		}
		for _, u := range []string{r.str("response_url"), assets} {
			a := m.call(http.MethodGet, u, "")
			if a.Code != http.StatusGone || a.str("error") != "expired" || a.str("reason") != "output_expired" || !strings.Contains(a.str("message"), "30 days") {
				t.Fatalf("%s after 31 days: %d %s", u, a.Code, a.Raw)
			}
		}
		if rec := m.call(http.MethodGet, m.api.URL+"/v1/jobs/"+j.ID, ""); rec.Code != http.StatusOK || rec.str("status") != "succeeded" {
			t.Fatalf("the job record after its outputs expired: %d %s", rec.Code, rec.Raw)
		}
	})
}

// TestERR_SyncReplayOfExpiredOutputsAnswers410: the synchronous host answers "the same
// document the result URL would answer" (spec 01), so once a run's outputs passed retention a
// replay of it (its idempotency key sent again) answers 410 expired (output_expired) as the
// result read does, where it answered 200 with freshly signed links to deleted files. The
// answer is the result read's own (one function for both hosts), so it is admitted as a
// download in the egress bucket the same way.
func TestERR_SyncReplayOfExpiredOutputsAnswers410(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		bucket := blobs.NewMemory()
		keep := blobs.Retention{Outputs: 30 * 24 * time.Hour}
		m := newModelsHarnessOn(t, db, bucket, func(c *server.Config) { c.Retain = keep })
		run := func() resp {
			return m.call(http.MethodPost, m.sync.URL+"/svc-serverless/image-lite", `{"positivePrompt":"a fox"}`, "Idempotency-Key", "sync-kept")
		}
		first := run()
		if first.Code != http.StatusOK || !strings.Contains(first.Raw, "/files/") {
			t.Fatalf("sync run: %d %s", first.Code, first.Raw)
		}
		if again := run(); again.Code != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay while kept: %d %v %s", again.Code, again.Header, again.Raw)
		}
		m.clock.Advance(31 * 24 * time.Hour)
		sweep := &blobs.Sweeper{Bucket: bucket, Retention: keep, Now: func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }, Log: quietLog()}
		if n, err := sweep.Sweep(context.Background()); err != nil || n == 0 {
			t.Fatalf("sweep deleted %d files: %v", n, err)
		}
		late := run()
		if late.Code != http.StatusGone || late.str("error") != "expired" || late.str("reason") != "output_expired" || strings.Contains(late.Raw, "/files/") {
			t.Fatalf("replay after 31 days: %d %s", late.Code, late.Raw)
		}
	})
}
