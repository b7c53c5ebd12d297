package sqlstore_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// The jobs engine's transactions on PostgreSQL are pipelined: a job's insert is sent with the
// COMMIT, so its failure is the transaction's. A taken key answers ErrDuplicate from InTx and
// a row the database refuses answers an error wrapping ErrNotRecorded; either way nothing of
// the transaction is kept (the write before the insert included), and the connection, the
// pool's only one here, serves the next transaction.
func TestPipelinedTxInsertFailsAtCommit(t *testing.T) {
	db := storetest.OpenPostgresWith(t, url.Values{"pool_max_conns": {"1"}})
	ctx := context.Background()
	s := sqlstore.Jobs{DB: db}
	storetest.NewAccount(t, db, "acct_p", auth.Pro, 100)
	insertJobs(t, s, runningJob("acct_p", "k1"))
	// Each transaction writes an outbox event first: it must go or stay with the insert.
	eventThenInsert := func(j jobs.Job) error {
		return s.InTx(ctx, func(tx jobs.Tx) error {
			if err := tx.InsertEvent(ctx, jobs.Event{ID: "evt_" + j.RequestID, AccountID: "acct_p", JobID: j.ID, RequestID: j.RequestID,
				Type: "job.succeeded", Product: j.Product, Status: jobs.Succeeded, Webhook: j.Webhook, CreatedAt: closeT0}); err != nil {
				return err
			}
			return tx.InsertJobs(ctx, []jobs.Job{j})
		})
	}
	dup := runningJob("acct_p", "k1")
	dup.RequestID = "req-other"
	if err := eventThenInsert(dup); !errors.Is(err, jobs.ErrDuplicate) {
		t.Fatalf("insert of a taken key: %v, want ErrDuplicate", err)
	}
	bad := runningJob("acct_p", "k2")
	bad.Input = []byte("{\"a\":\"\x00\"}")
	if err := eventThenInsert(bad); !errors.Is(err, jobs.ErrNotRecorded) {
		t.Fatalf("insert of a row the database refuses: %v, want one wrapping ErrNotRecorded", err)
	}
	if evs, err := (sqlstore.WebhookOutbox{DB: db}).Pending(ctx, 10); err != nil || len(evs) != 0 {
		t.Fatalf("events after two failed inserts: %d %v, want none kept", len(evs), err)
	}
	if _, err := s.JobByRequest(ctx, bad.RequestID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("refused job: %v, want not found", err)
	}
	good := runningJob("acct_p", "k3")
	if err := eventThenInsert(good); err != nil {
		t.Fatalf("the next transaction on the same connection: %v", err)
	}
	if evs, err := (sqlstore.WebhookOutbox{DB: db}).Pending(ctx, 10); err != nil || len(evs) != 1 || evs[0].JobID != good.ID {
		t.Fatalf("events after the good transaction: %+v %v, want its one", evs, err)
	}
}

// A statement after a waiting insert sees it (the insert is sent first, in the same round
// trip), and a transaction's work is visible to others only once it committed.
func TestPipelinedTxWaitingWriteGoesFirst(t *testing.T) {
	db := storetest.OpenPostgres(t)
	ctx := context.Background()
	s := sqlstore.Jobs{DB: db}
	storetest.NewAccount(t, db, "acct_w", auth.Pro, 100)
	err := s.InTx(ctx, func(tx jobs.Tx) error {
		if err := tx.InsertJobs(ctx, []jobs.Job{runningJob("acct_w", "w1")}); err != nil {
			return err
		}
		if _, err := tx.JobByRequestForUpdate(ctx, "req-acct_w-w1"); err != nil {
			t.Errorf("the waiting insert inside the transaction: %v, want it read", err)
		}
		if err := tx.InsertJobs(ctx, []jobs.Job{runningJob("acct_w", "w2")}); err != nil {
			return err
		}
		if _, err := s.JobByRequest(ctx, "req-acct_w-w1"); !errors.Is(err, jobs.ErrNotFound) {
			t.Errorf("another connection read an uncommitted job: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{"req-acct_w-w1", "req-acct_w-w2"} {
		if _, err := s.JobByRequest(ctx, req); err != nil {
			t.Fatalf("%s after the commit: %v", req, err)
		}
	}
}
