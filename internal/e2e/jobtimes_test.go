package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestJOB24_JobRecordTimesShareOnePrecision: a job record's created_at, started_at and
// finished_at are written alike, RFC 3339 in UTC with microseconds, so the differences a
// client takes (the wait before the start, the run) are never negative: started_at was
// written to the second while created_at kept its microseconds, and a job started within the
// second it was created read as started before it was created.
func TestJOB24_JobRecordTimesShareOnePrecision(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarnessOn(t, db, blobs.NewMemory(), nil)
		p := h.submit("image-turbo", "", `{"positivePrompt":"a cat","width":512,"height":512}`)
		if p.Code != http.StatusOK {
			t.Fatalf("photo submit: %d %s", p.Code, p.Raw)
		}
		j := h.waitSettled(p.str("request_id"))
		rec := h.call(http.MethodGet, h.api.URL+"/v1/jobs/"+j.ID, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("GET /v1/jobs/%s: %d %s", j.ID, rec.Code, rec.Raw)
		}
		const layout = "2006-01-02T15:04:05.000000Z"
		var at []time.Time
		for _, field := range []string{"created_at", "started_at", "finished_at"} {
			v := rec.str(field)
			ti, err := time.Parse(layout, v)
			if err != nil {
				t.Fatalf("%s %q is not RFC 3339 UTC with microseconds: %v", field, v, err)
			}
			at = append(at, ti)
		}
		if at[1].Before(at[0]) || at[2].Before(at[1]) {
			t.Errorf("times out of order: created %s, started %s, finished %s", at[0], at[1], at[2])
		}
	})
}
