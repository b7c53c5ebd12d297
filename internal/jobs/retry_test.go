package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
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

// twiceStore runs every transaction's function twice: the first run succeeds and is rolled
// back, as when a store retries a transaction whose COMMIT failed after its function returned
// (PostgreSQL retries serialization failures).
type twiceStore struct{ sqlstore.Jobs }

var errRetried = errors.New("the commit failed: run the transaction again")

func (s twiceStore) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	err := s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errRetried
	})
	if !errors.Is(err, errRetried) {
		return err
	}
	return s.Jobs.InTx(ctx, fn)
}

// InOneStatement runs fn twice too (PostgreSQL retries a lone statement's serialization
// failure as it does a transaction's).
func (s twiceStore) InOneStatement(ctx context.Context, fn func(jobs.Tx) error) error {
	return s.InTx(ctx, fn)
}

// JOB-05 (issue 10): a submit whose transaction the store runs a second time keeps one runner
// slot, not two. The retried run gives back the slot its first run took; before, the slot
// leaked, and with one slot per model every later submit of that model was refused
// service_busy. The retried settlement, too, charges and records each job once.
func TestRetriedSubmitKeepsOneSlot(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	if m.Lifecycle.Queue == catalog.QueueOffers {
		t.Fatal("image-4b offers a queue: the test needs a model that starts at once or refuses")
	}
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		fixed := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		js, keyID := oneSlotService(t, db, twiceStore{sqlstore.Jobs{DB: db}}, cat, doneRunner{}, func() time.Time { return fixed }, "acct_r")
		var quoted int64
		for i := range 3 {
			a, _ := db.Account(ctx, "acct_r")
			k, _ := db.Key(ctx, keyID)
			res, err := js.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: k}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
			if e, ok := apierr.As(err); ok && e.Code == apierr.ServiceBusy {
				t.Fatalf("submit %d: service_busy: a slot taken by a retried transaction was never given back", i+1)
			} else if err != nil {
				t.Fatalf("submit %d: %v", i+1, err)
			}
			js.Drain()
			got, err := js.GetByID(ctx, "acct_r", res.Job.ID)
			if err != nil || !got.Settled() || got.Outcome != jobs.Succeeded || got.Charged != res.Job.Quoted {
				t.Fatalf("job %d: %+v %v: want succeeded, charged its quote once", i+1, got, err)
			}
			quoted += res.Job.Quoted
		}
		a, _ := db.Account(ctx, "acct_r")
		sum, _ := db.LedgerSum(ctx, "acct_r")
		if a.Balance != 10_000-quoted || sum != a.Balance {
			t.Fatalf("balance %d, ledger sum %d: want %d for three jobs charged once each", a.Balance, sum, 10_000-quoted)
		}
	})
}

// failingCommitStore fails the COMMIT of the next transaction whose function succeeds while it
// is armed: that transaction's work is rolled back and its caller told, as when the group
// commit's COMMIT fails or a retried transaction runs out of retries.
type failingCommitStore struct {
	sqlstore.Jobs
	armed *atomic.Bool
}

var errCommit = errors.New("the COMMIT failed")

func (s failingCommitStore) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	if !s.armed.Load() {
		return s.Jobs.InTx(ctx, fn)
	}
	err := s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errCommit
	})
	if errors.Is(err, errCommit) {
		s.armed.Store(false)
	}
	return err
}

// outcomes is a Recorder that counts the settled jobs it is told of, by outcome.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) JobFinished(_, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[outcome]++
}

func (o *outcomes) CreditsCharged(string, int64)  {}
func (o *outcomes) CreditsRefunded(string, int64) {}

func (o *outcomes) count(outcome jobs.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[string(outcome)]
}

// queueRig is a service whose image-4b queues behind one slot and whose runs wait for the test.
type queueRig struct {
	t     *testing.T
	db    *sqlstore.DB
	js    *jobs.Service
	gate  gateRunner
	rec   *outcomes
	key   string
	fixed time.Time
}

func newQueueRig(t *testing.T, db *sqlstore.DB, store jobs.Store) *queueRig {
	t.Helper()
	cat := queueCatalog(t)
	r := &queueRig{t: t, db: db, gate: gateRunner{release: make(chan struct{})}, rec: &outcomes{},
		fixed: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	r.js, r.key = oneSlotService(t, db, store, cat, r.gate, func() time.Time { return r.fixed }, "acct_q")
	r.js.Observe(r.rec)
	return r
}

// oneSlotService is a jobs service over store in which every model runs on run and image-4b
// has one slot, with a Pro account of 10,000 credits and a key of it (whose id it answers).
func oneSlotService(t *testing.T, db *sqlstore.DB, store jobs.Store, cat *catalog.Catalog, run runners.Runner, now func() time.Time, account string) (*jobs.Service, string) {
	t.Helper()
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = run
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := jobs.DefaultConfig()
	cfg.Concurrency = map[string]int{"image-4b": 1}
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	js := jobs.New(jobs.Deps{Store: store, Ledger: ledger.New(store, now), Catalog: cat, Runners: reg, Env: env, Seats: jobs.NewSeats(8, 8, 8), Now: now, Log: log}, cfg)
	storetest.NewAccount(t, db, account, auth.Pro, 10_000)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("retry-test-secret"), now, log)
	minted, err := as.Mint(context.Background(), auth.MintParams{AccountID: account})
	if err != nil {
		t.Fatal(err)
	}
	return js, minted.Record.ID
}

func (r *queueRig) submit() jobs.Job {
	r.t.Helper()
	ctx := context.Background()
	m, _ := r.js.Catalog().Model("image-4b")
	a, _ := r.db.Account(ctx, "acct_q")
	k, _ := r.db.Key(ctx, r.key)
	res, err := r.js.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: k}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
	if err != nil {
		r.t.Fatal(err)
	}
	return res.Job
}

// finishOne lets one waiting run finish and waits for every run to end.
func (r *queueRig) finishOne() {
	r.gate.release <- struct{}{}
	r.js.Drain()
}

// ceilingAt lets the key spend up to amount this month.
func (r *queueRig) ceilingAt(amount int64) {
	r.t.Helper()
	if err := r.db.SetKeyCeiling(context.Background(), r.key, auth.Ceiling{Mode: auth.Fixed, Amount: amount}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *queueRig) job(id string) jobs.Job {
	r.t.Helper()
	j, err := r.js.GetByID(context.Background(), "acct_q", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

func (r *queueRig) events(jobID string) int {
	r.t.Helper()
	var n int
	if err := r.db.SQL().QueryRow(`SELECT count(*) FROM events WHERE job_id = $1`, jobID).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// credits checks the balance, the ledger's sum and the key's spend after charges totalling spent.
func (r *queueRig) credits(spent int64) {
	r.t.Helper()
	ctx := context.Background()
	a, _ := r.db.Account(ctx, "acct_q")
	sum, _ := r.db.LedgerSum(ctx, "acct_q")
	k, _ := r.db.Key(ctx, r.key)
	if a.Balance != 10_000-spent || sum != a.Balance || k.SpentIn(r.fixed) != spent {
		r.t.Fatalf("balance %d, ledger sum %d, key spend %d: want %d, the balance, %d", a.Balance, sum, k.SpentIn(r.fixed), 10_000-spent, spent)
	}
}

// QST-11 / WH-26: every transaction of the queue's paths run twice (a store that retries them)
// moves credits and settles each job once: a queued job charged at its turn, a waiting job
// cancelled, a waiting job refused at its turn, jobs that finished. Each settled job has one
// event and is reported once, the balance equals the ledger's sum, and no slot leaks.
func TestQST11_RetriedQueueTransactionsSettleOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		r := newQueueRig(t, db, twiceStore{sqlstore.Jobs{DB: db}})
		first := r.submit()
		second, third := r.submit(), r.submit()
		if first.Status != jobs.InProgress || second.Status != jobs.InQueue || third.Status != jobs.InQueue {
			t.Fatalf("%s %s %s: want one running, two waiting", first.Status, second.Status, third.Status)
		}
		q := first.Quoted
		if j, pending, err := r.js.Cancel(ctx, "acct_q", third.RequestID); err != nil || pending || j.Outcome != jobs.Cancelled {
			t.Fatalf("cancel of a waiting job: %+v %v %v", j, pending, err)
		}
		r.finishOne()
		r.js.Sweep(ctx) // the second job's turn: charged as it starts
		if j := r.job(second.ID); j.Status != jobs.InProgress || j.Reserved != q {
			t.Fatalf("second job at its turn: %s reserved %d, want started and charged %d", j.Status, j.Reserved, q)
		}
		fourth := r.submit()
		r.ceilingAt(2*q + q/2) // the fourth job's turn finds no room under the key's ceiling
		r.finishOne()
		r.js.Sweep(ctx)
		r.js.Drain()
		for _, c := range []struct {
			job     jobs.Job
			outcome jobs.Outcome
			charged int64
		}{{first, jobs.Succeeded, q}, {second, jobs.Succeeded, q}, {third, jobs.Cancelled, 0}, {fourth, jobs.Failed, 0}} {
			j := r.job(c.job.ID)
			if !j.Settled() || j.Outcome != c.outcome || j.Charged != c.charged || j.Reserved != c.charged {
				t.Fatalf("job %s: %s charged %d reserved %d: want %s, %d", j.ID, j.Outcome, j.Charged, j.Reserved, c.outcome, c.charged)
			}
			if n := r.events(j.ID); n != 1 {
				t.Fatalf("job %s: %d events, want 1", j.ID, n)
			}
		}
		if got := r.job(fourth.ID).ErrorCode; got != string(apierr.KeyCreditCeiling) {
			t.Fatalf("fourth job failed %s, want key_credit_ceiling", got)
		}
		r.credits(2 * q)
		if r.rec.count(jobs.Succeeded) != 2 || r.rec.count(jobs.Cancelled) != 1 || r.rec.count(jobs.Failed) != 1 {
			t.Fatalf("reported %v: want 2 succeeded, 1 cancelled, 1 failed", r.rec.n)
		}
		r.ceilingAt(1_000_000)
		if j := r.submit(); j.Status != jobs.InProgress {
			t.Fatalf("a submit to the idle model: %s, want started (a slot leaked)", j.Status)
		}
		r.finishOne()
	})
}

// QST-11 / WH-26: a queued job refused at its turn is reported settled only once its failure
// committed. Before, a refusal whose COMMIT failed was reported (log line, metrics, waiters
// woken) although the job still waited, and the same sweep, trying again, reported it a
// second time when the failure did commit.
func TestQST11_RefusalAtTurnReportedOnceCommitted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		var armed atomic.Bool
		r := newQueueRig(t, db, failingCommitStore{sqlstore.Jobs{DB: db}, &armed})
		first := r.submit()
		waiting := r.submit()
		q := first.Quoted
		r.ceilingAt(q + q/2)
		r.finishOne()
		armed.Store(true)
		r.js.Sweep(ctx) // the refusal's COMMIT fails
		if armed.Load() {
			t.Fatal("no transaction of the sweep committed anything")
		}
		if j := r.job(waiting.ID); j.Status != jobs.InQueue || r.rec.count(jobs.Failed) != 0 {
			t.Fatalf("after a failed COMMIT: job %s, %d reported failed: want still waiting, none reported", j.Status, r.rec.count(jobs.Failed))
		}
		r.js.Sweep(ctx)
		j := r.job(waiting.ID)
		if !j.Settled() || j.Outcome != jobs.Failed || j.ErrorCode != string(apierr.KeyCreditCeiling) || j.Charged != 0 {
			t.Fatalf("after the next sweep: %s %s charged %d: want failed key_credit_ceiling, nothing charged", j.Outcome, j.ErrorCode, j.Charged)
		}
		if n := r.events(j.ID); n != 1 || r.rec.count(jobs.Failed) != 1 {
			t.Fatalf("%d events, %d reported failed: want 1 and 1", n, r.rec.count(jobs.Failed))
		}
		r.credits(q)
	})
}
