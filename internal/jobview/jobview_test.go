package jobview_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
)

func model(t *testing.T, slug string) *catalog.Model {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := cat.Model(slug)
	if !ok {
		t.Fatalf("no model %s", slug)
	}
	return m
}

// asJSON is v as a client reads it.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestJOB17_GiveUpAfterSeconds: give_up_after_seconds is the maximum wait to start plus the
// maximum run; a queued job's wait is its own bound (the queue deadline or a shorter
// X-Svc-Request-Timeout, rounded up to whole seconds). Proves JOB-17.
func TestJOB17_GiveUpAfterSeconds(t *testing.T) {
	m := *model(t, "image-4b")
	m.Lifecycle = catalog.Lifecycle{Queue: catalog.QueueOffers, StallCeilingSeconds: 300, MaxWaitSeconds: 600}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, c := range []struct {
		startBy *time.Time
		want    int
	}{
		{nil, 900},
		{at(600 * time.Second), 900},
		{at(30 * time.Second), 330},
		{at(2500 * time.Millisecond), 303},
	} {
		j := jobs.Job{CreatedAt: now, StartBy: c.startBy, Status: jobs.InQueue}
		if got := jobview.GiveUpAfterSeconds(j, &m); got != c.want {
			t.Errorf("start by %v: %d, want %d", c.startBy, got, c.want)
		}
		doc := asJSON(t, jobview.URLs{Queue: "https://q"}.Submit(j, 0, false, jobview.SubmitFields{Model: &m}))
		if doc["give_up_after_seconds"] != float64(c.want) {
			t.Errorf("doc give_up_after_seconds %v, want %d", doc["give_up_after_seconds"], c.want)
		}
	}
	shipped := model(t, "music-turbo")
	if got := jobview.GiveUpAfterSeconds(jobs.Job{CreatedAt: now}, shipped); got != 600 {
		t.Errorf("music-turbo: %d, want 0 wait + 600 run", got)
	}
}

// TestJOB20_SubmitFieldsOfTheWait: every submit answer carries timed_out (false when no wait
// ran out, true when one did); waited only when wait was asked for, false with wait_declined
// when no seat held the connection. Proves JOB-19, JOB-20, JOB-21.
func TestJOB20_SubmitFieldsOfTheWait(t *testing.T) {
	m := model(t, "image-4b")
	j := jobs.Job{ID: "photo_k1", RequestID: "r1", Model: m.Slug, Product: m.Product, Status: jobs.InProgress, CreatedAt: time.Now()}
	u := jobview.URLs{Queue: "https://q"}
	cases := []struct {
		f        jobview.SubmitFields
		timedOut bool
		waited   any // nil: absent
		declined any
	}{
		{jobview.SubmitFields{}, false, nil, nil},
		{jobview.SubmitFields{Wait: true}, false, true, nil},
		{jobview.SubmitFields{Wait: true, TimedOut: true}, true, true, nil},
		{jobview.SubmitFields{Wait: true, WaitDeclined: "account_busy"}, false, false, "account_busy"},
	}
	for i, c := range cases {
		c.f.Model = m
		d := asJSON(t, u.Submit(j, 0, false, c.f))
		if d["timed_out"] != c.timedOut {
			t.Errorf("case %d: timed_out %v, want %v", i, d["timed_out"], c.timedOut)
		}
		if d["waited"] != c.waited {
			t.Errorf("case %d: waited %v, want %v", i, d["waited"], c.waited)
		}
		if d["wait_declined"] != c.declined {
			t.Errorf("case %d: wait_declined %v, want %v", i, d["wait_declined"], c.declined)
		}
	}
}

// TestQST13_RecordStatus: the job record reads succeeded, failed or cancelled once settled
// (the queue protocol reads COMPLETED for all three), with id <product>_<key>, object job,
// error_code null or the code, credits_charged after any refund, credits_reserved taken at
// charge, poll_after_seconds and coverage. Proves QST-13, JOB-24, JOB-25.
func TestQST13_RecordStatus(t *testing.T) {
	u := jobview.URLs{Queue: "https://q"}
	base := jobs.Job{ID: "photo_k1", RequestID: "r1", Model: "image-4b", Product: "photo", IdempotencyKey: "k1",
		Quoted: 11, Reserved: 11, CreatedAt: time.Now()}
	for _, c := range []struct {
		status  jobs.QueueStatus
		outcome jobs.Outcome
		code    string
		charged int64
		want    string
		poll    int
	}{
		{jobs.Completed, jobs.Succeeded, "", 11, "succeeded", 0},
		{jobs.Completed, jobs.Failed, "stalled", 0, "failed", 0},
		{jobs.Completed, jobs.Cancelled, "", 6, "cancelled", 0},
		{jobs.InProgress, "", "", 11, "running", 1},
		{jobs.InQueue, "", "", 0, "queued", 2},
	} {
		j := base
		j.Status, j.Outcome, j.ErrorCode, j.Charged = c.status, c.outcome, c.code, c.charged
		d := jobview.Record(j, u)
		var code any
		if c.code != "" {
			code = c.code
		}
		for k, v := range map[string]any{"id": "photo_k1", "object": "job", "product": "photo", "status": c.want, "error_code": code,
			"credits_charged": c.charged, "credits_reserved": int64(11), "poll_after_seconds": c.poll} {
			if d[k] != v {
				t.Errorf("%s: %s = %v, want %v", c.want, k, d[k], v)
			}
		}
		if _, ok := d["coverage"]; !ok {
			t.Errorf("%s: no coverage", c.want)
		}
	}
}

// TestQST12_CancelledResultSaysWhatStands proves QST-12 (a cancelled job's result read answers
// the catalogued error) with ERR-03's `charged` telling what stands for that job: a job charged
// and cancelled after it started keeps its charge (stands), a job whose reserve was given back
// reads refunded, a job never charged reads no.
func TestQST12_CancelledResultSaysWhatStands(t *testing.T) {
	for _, c := range []struct {
		reserved, charged int64
		want              any
	}{
		{reserved: 12, charged: 12, want: "stands"},
		{reserved: 12, charged: 5, want: "stands"},
		{reserved: 12, charged: 0, want: "refunded"},
		{reserved: 0, charged: 0, want: "no"},
	} {
		j := jobs.Job{Status: jobs.Completed, Outcome: jobs.Cancelled, Reserved: c.reserved, Charged: c.charged}
		e := jobview.Failure(j)
		status, body := httpapi.ErrorBody(e, httpapi.QueueSurface)
		if status != 410 || body["error"] != "expired" || body["reason"] != "cancelled" {
			t.Fatalf("%+v: %d %v", c, status, body)
		}
		if body["charged"] != c.want {
			t.Fatalf("reserved %d charged %d: charged = %v, want %v (%v)", c.reserved, c.charged, body["charged"], c.want, body["message"])
		}
	}
}
