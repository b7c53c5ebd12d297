package jobs_test

import (
	"context"
	"io"
	"log/slog"
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

// doneRunner completes at once, having done the fraction done of the work (all of it when 0).
type doneRunner struct{ done float64 }

func (r doneRunner) Run(context.Context, runners.Job, runners.Env) (runners.Result, error) {
	if r.done == 0 {
		r.done = 1
	}
	return runners.Result{Document: map[string]any{"ok": true}, Done: r.done}, nil
}

// engine is a jobs service over a fresh database with runners that answer at once; Run is not
// started, so only the submit and the settlement touch the database.
type engine struct {
	db  *sqlstore.DB
	js  *jobs.Service
	p   *auth.Principal
	cat *catalog.Catalog
}

func newEngine(t *testing.T, db *sqlstore.DB, opts ...func(*jobs.Config)) *engine {
	return newEngineTB(t, db, opts...)
}

func newEngineTB(t testing.TB, db *sqlstore.DB, opts ...func(*jobs.Config)) *engine {
	return newEngineWith(t, db, doneRunner{}, opts...)
}

// newEngineWith is newEngine with every model on runner.
func newEngineWith(t testing.TB, db *sqlstore.DB, runner runners.Runner, opts ...func(*jobs.Config)) *engine {
	t.Helper()
	ctx := context.Background()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = runner
	}
	now := func() time.Time { return time.Now().UTC() }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := jobs.DefaultConfig()
	cfg.InFlight = map[auth.Plan]int{auth.Pro: 1 << 20}
	for _, o := range opts {
		o(&cfg)
	}
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	js := jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, now), Catalog: cat, Runners: reg, Env: env, Seats: jobs.NewSeats(8, 8, 8), Now: now, Log: log}, cfg)
	storetest.NewAccount(t, db, "acct_e", auth.Pro, ledger.MaxGrant)
	// The key follows the plan's ceiling, the monthly allowance: large enough for a benchmark.
	if err := db.SetAccountPlan(ctx, "acct_e", auth.Pro, auth.MaxMonthlyAllowance); err != nil {
		t.Fatal(err)
	}
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("engine-test-secret"), now, log)
	m, err := as.Mint(ctx, auth.MintParams{AccountID: "acct_e"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := db.Account(ctx, "acct_e")
	if err != nil {
		t.Fatal(err)
	}
	return &engine{db: db, js: js, p: &auth.Principal{Account: a, Key: m.Record}, cat: cat}
}

// submit runs one job from submit to settled and answers the statements and transactions it
// took (BEGIN and COMMIT not counted).
func (e *engine) submit(t testing.TB, model, key string) (statements, transactions int64) {
	t.Helper()
	m, ok := e.cat.Model(model)
	if !ok {
		t.Fatalf("no model %s", model)
	}
	s0, t0 := e.db.Stats()
	res, err := e.js.Submit(context.Background(), jobs.SubmitRequest{Principal: e.p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`), IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	e.js.Drain()
	s1, t1 := e.db.Stats()
	j, err := e.js.GetByID(context.Background(), e.p.Account.ID, res.Job.ID)
	if err != nil || !j.Settled() || j.Outcome != jobs.Succeeded {
		t.Fatalf("job %+v %v", j, err)
	}
	return s1 - s0, t1 - t0
}

// THR: a job costs at most 7 SQL statements from submit to settled (BEGIN and COMMIT aside) in
// two transactions, on SQLite: the key is read with the account the charge locks, the
// idempotency read is skipped for a key the service minted, passes are read only when the
// account has some, each ledger movement (balance, entry, usage rollup) is one statement, and
// the run settles from the job it holds, without reading its row again.
func TestStatementsPerJob(t *testing.T) {
	e := newEngine(t, storetest.OpenSQLite(t))
	e.submit(t, "image-4b", "") // warm: prepares the statements
	st, tx := e.submit(t, "image-4b", "")
	t.Logf("minted key: %d statements, %d transactions per job", st, tx)
	if st > 7 || tx != 2 {
		t.Fatalf("a job took %d statements and %d transactions, want at most 7 and 2", st, tx)
	}
	st, tx = e.submit(t, "image-4b", "client-key-1")
	t.Logf("client key: %d statements, %d transactions per job", st, tx)
	if st > 8 || tx != 2 {
		t.Fatalf("a job with the client's key took %d statements and %d transactions, want at most 8 and 2", st, tx)
	}
}

// THR: on PostgreSQL a job alone (a batch of one) costs at most 6 statements from submit to
// settled, and its submit's transaction two round trips: the account's lock, its key and its
// in-flight count; then the charge and the job's insert with the COMMIT. The settlement is a
// statement of its own, outside a transaction, where settlements that wait together share one. Sixteen submits waiting
// together share those statements and round trips: at most 2 statements a job in all. A
// submit its balance does not cover answers insufficient_credits, nothing moved.
func TestStatementsPerJobTogether(t *testing.T) {
	db := storetest.OpenPostgres(t)
	e := newEngine(t, db, func(c *jobs.Config) { c.ModelConcurrency = 64 })
	e.submit(t, "image-4b", "") // warm: prepares the statements
	trips := db.PipelinedRoundTrips()
	st, tx := e.submit(t, "image-4b", "")
	trips = db.PipelinedRoundTrips() - trips
	t.Logf("one job: %d statements, %d transactions, %d round trips in the submit's transaction", st, tx, trips)
	if st > 6 || tx > 2 {
		t.Fatalf("a job took %d statements and %d transactions, want at most 6 and 2", st, tx)
	}
	if trips != 2 {
		t.Fatalf("the submit's transaction took %d round trips, want 2", trips)
	}

	const n = 16
	m, _ := e.cat.Model("image-4b")
	pause := e.js.PauseBatcher()
	s0, _ := db.Stats()
	trips = db.PipelinedRoundTrips()
	results := make(chan error, n)
	for range n {
		go func() {
			_, err := e.js.Submit(context.Background(), jobs.SubmitRequest{Principal: e.p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
			results <- err
		}()
	}
	pause.Await(n)
	pause.Release()
	for range n {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	e.js.Drain()
	s1, _ := db.Stats()
	trips = db.PipelinedRoundTrips() - trips
	t.Logf("%d jobs together: %d statements in all, %d round trips in the submits' transaction", n, s1-s0, trips)
	if s1-s0 > 2*n || trips != 2 {
		t.Fatalf("%d jobs together took %d statements and %d round trips, want at most %d and 2", n, s1-s0, trips, 2*n)
	}
	assertLedger(t, db, "acct_e")

	ctx := context.Background()
	if err := db.SetAccountPlan(ctx, "acct_e", auth.Pro, 0); err != nil {
		t.Fatal(err)
	}
	a, err := db.Account(ctx, "acct_e")
	if err != nil {
		t.Fatal(err)
	}
	led := ledger.New(db, time.Now)
	if _, err := led.Grant(ctx, "acct_e", ledger.Credits(1-a.Balance)); err != nil { // an operator's correction
		t.Fatal(err)
	}
	e.p.Account = a // the gate's cache: it still sees the old balance
	_, err = e.js.Submit(ctx, jobs.SubmitRequest{Principal: e.p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
	if e, ok := apierr.As(err); !ok || e.Code != apierr.InsufficientCredits {
		t.Fatalf("a submit the balance does not cover: %v", err)
	}
	if got, _ := db.Account(ctx, "acct_e"); got.Balance != 1 {
		t.Fatalf("a refused submit moved the balance to %d", got.Balance)
	}
}

// assertLedger fails unless the account's balance is the sum of its ledger entries.
func assertLedger(t *testing.T, db *sqlstore.DB, account string) {
	t.Helper()
	a, err := db.Account(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := db.LedgerSum(context.Background(), account); err != nil || sum != a.Balance {
		t.Fatalf("%s: balance %d, ledger sum %d (%v)", account, a.Balance, sum, err)
	}
}

// THR: on PostgreSQL a job whose run did half its work is refunded the rest in its
// settlement's transaction, in three round trips: BEGIN with the refund's entry (which answers
// the balance); the lowering of the key's spend, sent with the job's update and its event; and
// the COMMIT. The whole job takes five, its submit's two included.
func TestRefundSettlementRoundTrips(t *testing.T) {
	db := storetest.OpenPostgres(t)
	e := newEngineWith(t, db, doneRunner{done: 0.5})
	m, _ := e.cat.Model("image-4b")
	submit := func() jobs.Job {
		t.Helper()
		res, err := e.js.Submit(context.Background(), jobs.SubmitRequest{Principal: e.p, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
		if err != nil {
			t.Fatal(err)
		}
		e.js.Drain()
		j, err := e.js.GetByID(context.Background(), e.p.Account.ID, res.Job.ID)
		if err != nil || !j.Settled() || j.Charged >= j.Reserved || j.Charged == 0 {
			t.Fatalf("job %+v %v: want settled, charged part of its reserve", j, err)
		}
		return j
	}
	submit() // warm: prepares the statements
	trips := db.PipelinedRoundTrips()
	submit()
	if trips = db.PipelinedRoundTrips() - trips; trips != 5 {
		t.Fatalf("a job refunded at settlement took %d round trips, want 5", trips)
	}
	assertLedger(t, db, "acct_e")
}
