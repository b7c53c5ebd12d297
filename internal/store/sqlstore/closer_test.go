package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

var closeT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func runningJob(account, key string) jobs.Job {
	return jobs.Job{ID: "photo_" + key, AccountID: account, KeyID: "key_1", RequestID: "req-" + account + "-" + key, Model: "m",
		Product: "photo", IdempotencyKey: key, Input: []byte(`{"a":1}`), Status: jobs.InProgress, Quoted: 10, Reserved: 10,
		Priority: jobs.Normal, Dispatched: true, Webhook: "https://example.com/hook", CreatedAt: closeT0}
}

// insertJobs writes js in one transaction.
func insertJobs(t *testing.T, s sqlstore.Jobs, js ...jobs.Job) {
	t.Helper()
	ctx := context.Background()
	if err := s.InTx(ctx, func(tx jobs.Tx) error {
		for _, j := range js {
			if err := tx.InsertJobs(ctx, []jobs.Job{j}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// settled is j as a settlement writes it, with its event.
func settled(j jobs.Job, charged int64, message string) (jobs.Job, jobs.Event) {
	done := closeT0.Add(time.Minute)
	j.Status, j.Outcome, j.Charged, j.FinishedAt, j.ErrorMessage = jobs.Completed, jobs.Succeeded, charged, &done, message
	j.Logs = []jobs.LogLine{{Message: "ran", Level: "INFO", Source: "user", Timestamp: done}}
	j.Progress = 1
	return j, jobs.Event{ID: "evt_" + j.ID + "_succeeded", AccountID: j.AccountID, JobID: j.ID, RequestID: j.RequestID,
		Type: "job.succeeded", Product: j.Product, Status: jobs.Succeeded, Charged: charged, Reserved: j.Reserved, Webhook: j.Webhook, CreatedAt: done}
}

// The store's part of WH-28 and QST-11: CloseJobs writes settled jobs with one statement on
// PostgreSQL (one transaction on SQLite). It reports each update as its own statement would:
// written, or not for a job settled already; each job that took gets its one event (a chat
// turn, which has none, gets none); and a row the database refuses fails the whole statement,
// nothing of it written (the engine then writes each alone).
func TestSettlementsWrittenTogether(t *testing.T) { storetest.Each(t, testSettlementsWrittenTogether) }

func testSettlementsWrittenTogether(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	s := sqlstore.Jobs{DB: db}
	storetest.NewAccount(t, db, "acct_b", auth.Pro, 100)
	var all []jobs.Job
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		all = append(all, runningJob("acct_b", k))
	}
	all[5].Product = "chat" // a chat turn: settled without an event
	insertJobs(t, s, all...)
	a, b, c, d, e, f := all[0], all[1], all[2], all[3], all[4], all[5]
	// c is settled before the batch.
	cj, cev := settled(c, 4, "")
	if err := s.InOneStatement(ctx, func(tx jobs.Tx) error { return tx.CloseJob(ctx, cj, &cev) }); err != nil {
		t.Fatal(err)
	}
	closing := func(j jobs.Job, ev jobs.Event) jobs.Closing { return jobs.Closing{Job: j, Event: &ev} }
	aj, aev := settled(a, 7, "")
	bj, bev := settled(b, 8, "")
	fj, _ := settled(f, 3, "")
	s0, _ := db.Stats()
	took, err := s.CloseJobs(ctx, []jobs.Closing{closing(aj, aev), closing(bj, bev), closing(cj, cev), {Job: fj}})
	s1, _ := db.Stats()
	if err != nil || !took[0] || !took[1] || took[2] || !took[3] {
		t.Fatalf("a, b, c (settled before), f (no event): %v %v; want a, b and f written, c not", took, err)
	}
	if got, err := s.JobByRequest(ctx, f.RequestID); err != nil || !got.Settled() || got.Charged != 3 {
		t.Fatalf("f, the chat turn, as written: %+v %v", got, err)
	}
	if db.Dialect() == sqlstore.Postgres && s1-s0 != 1 {
		t.Fatalf("%d statements for the batch, want 1", s1-s0)
	}
	got, err := s.JobByRequest(ctx, a.RequestID)
	if err != nil || got.Charged != 7 || got.ErrorMessage != "" || !got.Settled() || got.Progress != 1 || len(got.Logs) != 1 ||
		got.FinishedAt == nil || !got.FinishedAt.Equal(*aj.FinishedAt) || got.StartBy != nil {
		t.Fatalf("a as written: %+v %v", got, err)
	}
	if db.Dialect() == sqlstore.Postgres {
		// A message PostgreSQL cannot store (a NUL) fails the statement: e is not written either.
		dj, dev := settled(d, 5, "bad\x00message")
		ej, eev := settled(e, 6, "")
		if _, err := s.CloseJobs(ctx, []jobs.Closing{closing(dj, dev), closing(ej, eev)}); err == nil {
			t.Fatal("a refused row: no error")
		}
		if got, err := s.JobByRequest(ctx, e.RequestID); err != nil || got.Settled() {
			t.Fatalf("e after its statement failed: %+v %v; want still running", got, err)
		}
	}
	evs, err := sqlstore.WebhookOutbox{DB: db}.Pending(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, ev := range evs {
		count[ev.JobID]++
	}
	want := map[string]int{a.ID: 1, b.ID: 1, c.ID: 1} // f, a chat turn, has none
	if !maps.Equal(count, want) {
		t.Fatalf("events per job %v, want %v", count, want)
	}
}

// Settlements made at once from many goroutines are each answered once and settle each job
// once.
func TestConcurrentSettlementsEachAnsweredOnce(t *testing.T) {
	db := storetest.OpenPostgres(t)
	ctx := context.Background()
	s := sqlstore.Jobs{DB: db}
	storetest.NewAccount(t, db, "acct_m", auth.Pro, 100)
	const n = 40
	js := make([]jobs.Job, n)
	for i := range js {
		js[i] = runningJob("acct_m", string(rune('A'+i%26))+string(rune('a'+i/26)))
	}
	insertJobs(t, s, js...)
	// Every job is settled twice at once: one of the two writes it.
	var wg sync.WaitGroup
	results := make([]error, 2*n)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, ev := settled(js[i%n], int64(i%n), "")
			results[i] = s.InOneStatement(ctx, func(tx jobs.Tx) error { return tx.CloseJob(ctx, j, &ev) })
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		first, second := results[i], results[i+n]
		if (first == nil) == (second == nil) || (first != nil && !errors.Is(first, jobs.ErrSettled)) || (second != nil && !errors.Is(second, jobs.ErrSettled)) {
			t.Fatalf("job %d: answers %v and %v; want one written, one ErrSettled", i, first, second)
		}
	}
	evs, err := sqlstore.WebhookOutbox{DB: db}.Pending(ctx, 2*n)
	if err != nil || len(evs) != n {
		t.Fatalf("%d events, want %d: %v", len(evs), n, err)
	}
}

// The batch settlement statement finds its jobs through an index whatever the table's
// statistics say: on a table of a few thousand jobs that was never analyzed (a service that
// has just started), and after ANALYZE. A sequential scan would cost each batch the whole
// table.
func TestSettlementsTogetherReadThroughAnIndex(t *testing.T) {
	db := storetest.OpenPostgres(t)
	ctx := context.Background()
	s := sqlstore.Jobs{DB: db}
	storetest.NewAccount(t, db, "acct_p", auth.Pro, 100)
	var all []jobs.Job
	var ids []string
	for i := range 3000 {
		j := runningJob("acct_p", fmt.Sprintf("p%04d", i))
		if i%100 != 0 {
			j, _ = settled(j, 10, "")
		} else if len(ids) < 8 {
			ids = append(ids, j.ID)
		}
		all = append(all, j)
	}
	insertJobs(t, s, all...)
	for _, when := range []string{"never analyzed", "analyzed"} {
		if when == "analyzed" {
			if _, err := db.SQL().ExecContext(ctx, `ANALYZE jobs`); err != nil {
				t.Fatal(err)
			}
		}
		plan, err := db.ExplainCloseTogether(ctx, "acct_p", ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range plan {
			if strings.Contains(line, "Seq Scan on jobs") {
				t.Errorf("%s: the batch settlement scans every job:\n%s", when, strings.Join(plan, "\n"))
				break
			}
		}
	}
}
