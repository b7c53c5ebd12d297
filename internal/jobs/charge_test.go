package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// gateRunner holds each run until the test lets it finish.
type gateRunner struct{ release chan struct{} }

func (g gateRunner) Run(ctx context.Context, _ runners.Job, _ runners.Env) (runners.Result, error) {
	select {
	case <-g.release:
	case <-ctx.Done():
		return runners.Result{}, ctx.Err()
	}
	return runners.Result{Document: map[string]any{"ok": true}, Done: 1}, nil
}

// queueCatalog is the shipped catalogue with image-4b offering a queue.
func queueCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	var f catalog.File
	if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
		t.Fatal(err)
	}
	for i := range f.Models {
		if f.Models[i].Slug == "image-4b" {
			f.Models[i].Lifecycle.Queue, f.Models[i].Lifecycle.MaxWaitSeconds = catalog.QueueOffers, 600
		}
	}
	c, err := catalog.New(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// queueEngine is a jobs service over db with queueCatalog, every model on one gateRunner, and
// an account of credits with one minted key; Run is not started.
func queueEngine(t *testing.T, db *sqlstore.DB, account string, credits int64, now func() time.Time, cfg jobs.Config) (*jobs.Service, *catalog.Catalog, gateRunner, auth.Minted) {
	t.Helper()
	cat := queueCatalog(t)
	gate := gateRunner{release: make(chan struct{})}
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = gate
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	js := jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, now), Catalog: cat, Runners: reg, Env: env, Seats: jobs.NewSeats(8, 8, 8), Now: now, Log: log}, cfg)
	storetest.NewAccount(t, db, account, auth.Pro, credits)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("charge-test-secret"), now, log)
	minted, err := as.Mint(context.Background(), auth.MintParams{AccountID: account})
	if err != nil {
		t.Fatal(err)
	}
	return js, cat, gate, minted
}

// JOB-05 / CEIL (issue 10): one charge path for submitted and queued jobs. A queued job is
// charged when it starts, and then the key's ceiling is checked as well as the balance: a job
// queued while the ceiling allowed it, whose turn comes after the ceiling was lowered, fails
// key_credit_ceiling and takes nothing. (Before, a queued job was charged at start without the
// ceiling check.)
func TestQueuedJobStartChecksTheCeiling(t *testing.T) {
	ctx := context.Background()
	db := storetest.OpenSQLite(t)
	fixed := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	cfg := jobs.DefaultConfig()
	cfg.Concurrency = map[string]int{"image-4b": 1}
	js, cat, gate, minted := queueEngine(t, db, "acct_c", 10_000, func() time.Time { return fixed }, cfg)
	if err := db.SetKeyCeiling(ctx, minted.Record.ID, auth.Ceiling{Mode: auth.Fixed, Amount: 1000}); err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	submit := func() jobs.SubmitResult {
		t.Helper()
		a, _ := db.Account(ctx, "acct_c")
		k, _ := db.Key(ctx, minted.Record.ID)
		res, err := js.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: k}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := submit()
	second := submit()
	if first.Job.Status != jobs.InProgress || second.Job.Status != jobs.InQueue || second.Job.Reserved != 0 {
		t.Fatalf("first %s, second %s reserved %d: want one running, one queued uncharged", first.Job.Status, second.Job.Status, second.Job.Reserved)
	}
	q := first.Job.Quoted
	// The ceiling is lowered while the second job waits: the spend so far leaves no room for it.
	if err := db.SetKeyCeiling(ctx, minted.Record.ID, auth.Ceiling{Mode: auth.Fixed, Amount: q + q/2}); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	js.Drain()
	js.Sweep(ctx) // the second job's turn
	js.Drain()
	got, err := js.GetByID(ctx, "acct_c", second.Job.ID)
	if err != nil || !got.Settled() || got.Outcome != jobs.Failed || got.ErrorCode != string(apierr.KeyCreditCeiling) || got.Reserved != 0 || got.Charged != 0 {
		t.Fatalf("second job %+v %v: want failed key_credit_ceiling, nothing charged", got, err)
	}
	a, _ := db.Account(ctx, "acct_c")
	k, _ := db.Key(ctx, minted.Record.ID)
	sum, _ := db.LedgerSum(ctx, "acct_c")
	if a.Balance != 10_000-q || sum != a.Balance || k.SpentIn(fixed) != q {
		t.Fatalf("balance %d (ledger %d), key spend %d: want %d and %d", a.Balance, sum, k.SpentIn(fixed), 10_000-q, q)
	}
}

// QST: a submit on a model that queues never overtakes a job already waiting: with a slot free
// but a job waiting for it (its turn not yet taken by the sweep), the submit queues behind,
// uncharged.
func TestSubmitQueuesBehindAWaitingJob(t *testing.T) {
	storetest.Each(t, testSubmitQueuesBehindAWaitingJob)
}

func testSubmitQueuesBehindAWaitingJob(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	cfg := jobs.DefaultConfig()
	cfg.Concurrency = map[string]int{"image-4b": 1}
	js, cat, gate, minted := queueEngine(t, db, "acct_q", 10_000, func() time.Time { return time.Now().UTC() }, cfg)
	m, _ := cat.Model("image-4b")
	submit := func() jobs.SubmitResult {
		t.Helper()
		a, _ := db.Account(ctx, "acct_q")
		res, err := js.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: minted.Record}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, second := submit(), submit()
	if first.Job.Status != jobs.InProgress || second.Job.Status != jobs.InQueue {
		t.Fatalf("first %s, second %s: want one running, one queued", first.Job.Status, second.Job.Status)
	}
	close(gate.release)
	js.Drain() // the first settles and frees its slot; no sweep runs, so the second still waits
	third := submit()
	if third.Job.Status != jobs.InQueue || third.Job.Reserved != 0 {
		t.Fatalf("third %s reserved %d: want queued behind the waiting job, uncharged", third.Job.Status, third.Job.Reserved)
	}
	a, _ := db.Account(ctx, "acct_q")
	sum, _ := db.LedgerSum(ctx, "acct_q")
	if q := first.Job.Quoted; a.Balance != 10_000-q || sum != a.Balance {
		t.Fatalf("balance %d (ledger %d): want %d, the first job's charge only", a.Balance, sum, 10_000-q)
	}
}

// JOB-12 / JOB-28: submits charged together (the submit batcher) whose transaction fails write
// nothing, and each is then submitted on its own: a submit whose idempotency key
// another request took while it waited for its batch is answered that request's job, charged
// once, and the others of its batch are charged once each. A submit the batch refuses
// (the balance) answers insufficient_credits, as the usual path would, and takes nothing.
func TestFailedBatchIsSubmittedOneByOne(t *testing.T) {
	storetest.Each(t, testFailedBatchIsSubmittedOneByOne)
}

func testFailedBatchIsSubmittedOneByOne(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	cfg := jobs.DefaultConfig()
	js, cat, gate, minted := queueEngine(t, db, "acct_t", 10_000, func() time.Time { return time.Now().UTC() }, cfg)
	m, _ := cat.Model("image-4b")
	a, _ := db.Account(ctx, "acct_t")
	p := &auth.Principal{Account: a, Key: minted.Record}
	submit := func(key string) (jobs.SubmitResult, error) {
		return js.Submit(ctx, jobs.SubmitRequest{Principal: p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`), IdempotencyKey: key})
	}

	pause := js.PauseBatcher()
	type answer struct {
		res jobs.SubmitResult
		err error
	}
	answers := make(chan answer, 3)
	for _, key := range []string{"taken", "", ""} {
		go func() {
			res, err := submit(key)
			answers <- answer{res, err}
		}()
	}
	pause.Await(3)
	// Another process takes the key "taken" while the three wait: their batch's insert fails.
	other := jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, func() time.Time { return time.Now().UTC() }), Catalog: cat, Runners: runners.Registry{"image-4b": gate}, Env: func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }, Seats: jobs.NewSeats(8, 8, 8), Now: func() time.Time { return time.Now().UTC() }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, jobs.DefaultConfig())
	winner, err := other.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: minted.Record}, Model: m,
		Body: []byte(`{"positivePrompt":"a dog"}`), IdempotencyKey: "taken"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(gate.release); js.Drain(); other.Drain() }()
	pause.Release()
	var replayed, charged int
	for range 3 {
		an := <-answers
		switch {
		case an.err != nil:
			t.Fatal(an.err)
		case an.res.Replayed:
			replayed++
			if an.res.Job.ID != winner.Job.ID || an.res.Job.RequestID != winner.Job.RequestID {
				t.Fatalf("replayed %s (%s), want the winner %s (%s)", an.res.Job.ID, an.res.Job.RequestID, winner.Job.ID, winner.Job.RequestID)
			}
		default:
			charged++
			if an.res.Job.Status != jobs.InProgress || an.res.Job.Reserved != an.res.Job.Quoted {
				t.Fatalf("submitted %+v: want running, charged its quote", an.res.Job)
			}
		}
	}
	q := winner.Job.Quoted
	after, _ := db.Account(ctx, "acct_t")
	if replayed != 1 || charged != 2 || after.Balance != 10_000-3*q {
		t.Fatalf("%d replayed, %d charged, balance %d: want 1, 2 and %d (three charges in all)", replayed, charged, after.Balance, 10_000-3*q)
	}
	assertLedger(t, db, "acct_t")

	// A balance short of the quote, judged in its batch: insufficient_credits, nothing taken.
	short := after.Balance - 3*q + 1
	if _, err := ledger.New(db, time.Now).Grant(ctx, "acct_t", ledger.Credits(-short)); err != nil {
		t.Fatal(err)
	}
	pause = js.PauseBatcher()
	for range 3 {
		go func() {
			res, err := submit("")
			answers <- answer{res, err}
		}()
	}
	pause.Await(3)
	pause.Release()
	var refused int
	for range 3 {
		an := <-answers
		if e, ok := apierr.As(an.err); ok && e.Code == apierr.InsufficientCredits {
			refused++
		} else if an.err != nil {
			t.Fatal(an.err)
		}
	}
	if end, _ := db.Account(ctx, "acct_t"); refused != 1 || end.Balance != q-1 {
		t.Fatalf("%d refused, balance %d: want 1 refused and %d left", refused, end.Balance, q-1)
	}
	assertLedger(t, db, "acct_t")
}

// panicOnce is a store whose first transaction panics after its function ran (a defect in a
// batch of submits' transaction, say); the transaction is rolled back.
type panicOnce struct {
	sqlstore.Jobs
	done atomic.Bool
}

func (p *panicOnce) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	if p.done.CompareAndSwap(false, true) {
		_ = p.Jobs.InTx(ctx, func(tx jobs.Tx) error {
			_ = fn(tx)
			return errors.New("rolled back")
		})
		panic("a defect in the batch's transaction")
	}
	return p.Jobs.InTx(ctx, fn)
}

// Reliability: a panic in the transaction of submits charged together is not the end of the
// process: it is logged, the batch wrote nothing, and each submit is then written alone,
// charged once.
func TestBatchPanicIsSubmittedOneByOne(t *testing.T) {
	storetest.Each(t, testBatchPanicIsSubmittedOneByOne)
}

func testBatchPanicIsSubmittedOneByOne(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	cfg := jobs.DefaultConfig()
	cat := queueCatalog(t)
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = doneRunner{}
	}
	js := jobs.New(jobs.Deps{Store: &panicOnce{Jobs: sqlstore.Jobs{DB: db}}, Ledger: ledger.New(db, func() time.Time { return time.Now().UTC() }), Catalog: cat, Runners: reg, Env: func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }, Seats: jobs.NewSeats(8, 8, 8), Now: func() time.Time { return time.Now().UTC() }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, cfg)
	storetest.NewAccount(t, db, "acct_p", auth.Pro, 10_000)
	minted, err := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("charge-test-secret"), time.Now, slog.New(slog.DiscardHandler)).
		Mint(ctx, auth.MintParams{AccountID: "acct_p"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := db.Account(ctx, "acct_p")
	m, _ := cat.Model("image-4b")
	pause := js.PauseBatcher()
	results := make(chan jobs.SubmitResult, 2)
	for range 2 {
		go func() {
			res, err := js.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: minted.Record}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
			if err != nil {
				t.Error(err)
			}
			results <- res
		}()
	}
	pause.Await(2)
	pause.Release()
	first, second := <-results, <-results
	js.Drain()
	after, _ := db.Account(ctx, "acct_p")
	if first.Job.ID == second.Job.ID || first.Job.Reserved == 0 || second.Job.Reserved == 0 || after.Balance != 10_000-first.Job.Quoted-second.Job.Quoted {
		t.Fatalf("jobs %s (%d) and %s (%d), balance %d: want two jobs charged once each", first.Job.ID, first.Job.Reserved, second.Job.ID, second.Job.Reserved, after.Balance)
	}
	assertLedger(t, db, "acct_p")
}
