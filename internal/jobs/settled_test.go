package jobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// THR (issue 10): a request held until its job settles (?wait, the sync host) reads nothing
// from the database when the job runs in this process: the run hands the committed settlement
// to the waiter, and what it hands is the job a read would answer.
func TestWaitTakesTheSettlementFromTheRun(t *testing.T) {
	e := newEngine(t, storetest.OpenSQLite(t))
	e.submit(t, "image-4b", "") // warm: prepares the statements
	ctx := context.Background()
	m, _ := e.cat.Model("image-4b")
	for range 20 {
		res, err := e.js.Submit(ctx, jobs.SubmitRequest{Principal: e.p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
		if err != nil {
			t.Fatal(err)
		}
		// The waiter and the run's settlement: the settlement's 3 statements and at most one
		// read (none while the job runs here; one when the run ended before the wait began).
		// Reading before and after the settlement, as waiters did, made 5.
		s0, _ := e.db.Stats()
		held, _, err := e.js.Wait(ctx, e.p.Account.ID, res.Job.RequestID, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		e.js.Drain()
		s1, _ := e.db.Stats()
		if got := s1 - s0; got > 4 {
			t.Fatalf("wait and settlement took %d statements, want at most 4", got)
		}
		if !held.Settled() || held.Outcome != jobs.Succeeded {
			t.Fatalf("held request answered %+v", held)
		}
		read, err := e.js.Get(ctx, e.p.Account.ID, res.Job.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(held)
		b, _ := json.Marshal(read)
		if string(a) != string(b) {
			t.Fatalf("held request's job differs from a read:\n held %s\n read %s", a, b)
		}
	}
}

// THR: a settled job is final, so reading it again (the status poll that sees COMPLETED, the
// result read after it) reads nothing from the database; another account still reads
// not_found.
func TestSettledJobReadFromMemory(t *testing.T) {
	e := newEngine(t, storetest.OpenSQLite(t))
	ctx := context.Background()
	m, _ := e.cat.Model("image-4b")
	res, err := e.js.Submit(ctx, jobs.SubmitRequest{Principal: e.p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
	if err != nil {
		t.Fatal(err)
	}
	e.js.Drain()
	s0, _ := e.db.Stats()
	for range 3 {
		j, err := e.js.Get(ctx, e.p.Account.ID, res.Job.RequestID)
		if err != nil || !j.Settled() || j.Outcome != jobs.Succeeded {
			t.Fatalf("read %+v %v", j, err)
		}
	}
	if s1, _ := e.db.Stats(); s1 != s0 {
		t.Fatalf("reads of a settled job took %d statements, want 0", s1-s0)
	}
	if _, err := e.js.Get(ctx, "acct_other", res.Job.RequestID); err == nil {
		t.Fatal("another account read the job")
	}
}
