package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// RunJobs is the conformance suite of the job tables, the ledger's writes in a job's
// transaction, the usage rollup and the plans of the hot queries.
func RunJobs(t *testing.T, open func(t testing.TB) Stores) {
	t.Run("JobReadsAndTransitions", func(t *testing.T) { testJobReads(t, open(t)) })
	t.Run("MintedKeyReadsBack", func(t *testing.T) { testMintedKey(t, open(t)) })
	t.Run("ClaimsInQueueOrder", func(t *testing.T) { testClaims(t, open(t)) })
	t.Run("LeasesAndHeartbeat", func(t *testing.T) { testLeases(t, open(t)) })
	t.Run("InFlightCount", func(t *testing.T) { testInFlight(t, open(t)) })
	t.Run("HoldSeesLockHolder", func(t *testing.T) { testHoldSeesLockHolder(t, open(t)) })
	t.Run("CloseJobWritesJobAndEvent", func(t *testing.T) { testCloseJob(t, open(t)) })
	t.Run("EventsQueuedForAReceiver", func(t *testing.T) { testEventsQueuedForAReceiver(t, open(t)) })
	t.Run("LedgerEntriesAndUsageRollup", func(t *testing.T) { testLedgerRollup(t, open(t)) })
	t.Run("HotQueriesUseIndexes", func(t *testing.T) { testPlans(t, open(t)) })
	t.Run("SearchPagesByKeyset", func(t *testing.T) { testSearch(t, open(t)) })
	t.Run("ListsEveryState", func(t *testing.T) { testListsEveryState(t, open(t)) })
}

// ACC-07: an account's job list without a filter reads one index per state and merges them;
// a job of every state the service knows is listed, newest first, and a page cut by its limit
// or by a cursor continues in the same order.
func testListsEveryState(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_e", auth.Pro, 100)
	var all []jobs.Job
	for i, st := range jobs.States {
		status, outcome, _ := st.Columns()
		// Two jobs per state, the states interleaved in time.
		for k := range 2 {
			j := newJob("acct_e", "photo", fmt.Sprintf("%s-%d", st, k), status, t0.Add(time.Duration(k*len(jobs.States)+i)*time.Minute))
			j.Outcome = outcome
			all = append(all, j)
		}
	}
	if err := insert(t, s.Jobs, all...); err != nil {
		t.Fatal(err)
	}
	newest := append([]jobs.Job(nil), all...)
	sort.Slice(newest, func(a, b int) bool { return newest[a].CreatedAt.After(newest[b].CreatedAt) })
	want := ids(newest)
	list, err := s.Jobs.ListJobs(ctx, "acct_e", t0.Add(time.Hour), 100)
	if err != nil || fmt.Sprint(ids(list)) != fmt.Sprint(want) {
		t.Fatalf("list %v %v, want every state newest first %v", ids(list), err, want)
	}
	if list, err = s.Jobs.ListJobs(ctx, "acct_e", t0.Add(time.Hour), 3); err != nil || fmt.Sprint(ids(list)) != fmt.Sprint(want[:3]) {
		t.Fatalf("list of 3 %v %v, want %v", ids(list), err, want[:3])
	}
	var got []string
	var after *jobs.Cursor
	for {
		page, err := s.Jobs.SearchJobs(ctx, "acct_e", jobs.Search{After: after, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(page)...)
		if len(page) < 4 {
			break
		}
		last := page[len(page)-1]
		after = &jobs.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages of 4 %v, want %v", got, want)
	}
}

func newJob(account, product, key string, status jobs.QueueStatus, at time.Time) jobs.Job {
	return jobs.Job{ID: product + "_" + key, AccountID: account, KeyID: "key_1", RequestID: "req-" + account + "-" + product + "-" + key,
		Model: "m-" + product, Product: product, IdempotencyKey: key, Input: []byte(`{"a":1}`), Status: status, Quoted: 10,
		Priority: jobs.Normal, Dispatched: true, CreatedAt: at}
}

func insert(t *testing.T, store jobs.Store, js ...jobs.Job) error {
	t.Helper()
	return store.InTx(context.Background(), func(tx jobs.Tx) error {
		for _, j := range js {
			if err := tx.InsertJobs(context.Background(), []jobs.Job{j}); err != nil {
				return err
			}
		}
		return nil
	})
}

// JOB-29: a key the service minted (jobs.MintedKey of the job's request id) reads back, and
// finds its job, like a key the caller chose, though its row keeps none; another account's
// read by it finds nothing, and so does a read by the key of a request id that is not a job's.
func testMintedKey(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_m", auth.Pro, 100)
	NewAccount(t, s.Ledger, "acct_n", auth.Pro, 100)
	j := newJob("acct_m", "photo", "unused", jobs.InProgress, t0)
	j.RequestID = "0190f5c2-0000-7000-8000-00000000abcd" // a request id as the service mints one
	j.IdempotencyKey = jobs.MintedKey(j.RequestID)
	chosen := newJob("acct_m", "photo", "k-chosen", jobs.InProgress, t0.Add(time.Second))
	if err := insert(t, s.Jobs, j, chosen); err != nil {
		t.Fatal(err)
	}
	got, err := s.Jobs.JobByIdempotencyKey(ctx, "acct_m", j.IdempotencyKey)
	if err != nil || got.ID != j.ID || got.IdempotencyKey != j.IdempotencyKey {
		t.Fatalf("by its minted key: %+v %v, want %s under %s", got, err, j.ID, j.IdempotencyKey)
	}
	if got, err := s.Jobs.JobByRequest(ctx, j.RequestID); err != nil || got.IdempotencyKey != j.IdempotencyKey {
		t.Fatalf("by request id: key %q %v, want %q", got.IdempotencyKey, err, j.IdempotencyKey)
	}
	if got, err := s.Jobs.JobByIdempotencyKey(ctx, "acct_m", "k-chosen"); err != nil || got.ID != chosen.ID {
		t.Fatalf("by a chosen key that starts with k: %+v %v", got, err)
	}
	var stored string
	if err := s.Inspect.SQL().QueryRowContext(ctx, `SELECT idem_key FROM jobs WHERE request_id = $1`, j.RequestID).Scan(&stored); err != nil || stored != "" {
		t.Fatalf("the row keeps %q %v for a minted key, want nothing", stored, err)
	}
	for _, miss := range [][2]string{{"acct_n", j.IdempotencyKey}, {"acct_m", jobs.MintedKey("0190f5c2-0000-7000-8000-00000000ffff")}, {"acct_m", j.RequestID}} {
		if got, err := s.Jobs.JobByIdempotencyKey(ctx, miss[0], miss[1]); !errors.Is(err, jobs.ErrNotFound) {
			t.Fatalf("%s by %q: %+v %v, want not found", miss[0], miss[1], got, err)
		}
	}
}

// JOB-28 / DESIGN 25: a job reads back as written, by request id, by id and by idempotency key;
// the key is unique per account whatever the product; a transition writes every field.
func testJobReads(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_j", auth.Pro, 100)
	NewAccount(t, s.Ledger, "acct_k", auth.Pro, 100)
	j := newJob("acct_j", "photo", "same-1", jobs.InQueue, t0)
	if err := insert(t, s.Jobs, j); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() (jobs.Job, error){
		"by request": func() (jobs.Job, error) { return s.Jobs.JobByRequest(ctx, j.RequestID) },
		"by id":      func() (jobs.Job, error) { return s.Jobs.Job(ctx, "acct_j", j.ID) },
		"by key":     func() (jobs.Job, error) { return s.Jobs.JobByIdempotencyKey(ctx, "acct_j", "same-1") },
	} {
		got, err := read()
		if err != nil || got.RequestID != j.RequestID || got.Status != jobs.InQueue || string(got.Input) != `{"a":1}` || !got.CreatedAt.Equal(t0) {
			t.Fatalf("%s: %+v %v", name, got, err)
		}
	}
	if _, err := s.Jobs.JobByIdempotencyKey(ctx, "acct_k", "same-1"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("another account's key: %v", err)
	}
	other := newJob("acct_j", "music", "same-1", jobs.InQueue, t0)
	if err := insert(t, s.Jobs, other); !errors.Is(err, jobs.ErrDuplicate) {
		t.Fatalf("the same key on another product: %v, want ErrDuplicate", err)
	}
	if err := insert(t, s.Jobs, newJob("acct_k", "music", "same-1", jobs.InQueue, t0)); err != nil {
		t.Fatalf("the same key on another account: %v", err)
	}
	// A transition: settled with a result, logs and metrics.
	done := t0.Add(time.Minute)
	err := s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		cur, err := tx.JobByRequestForUpdate(ctx, j.RequestID)
		if err != nil {
			return err
		}
		cur.Status, cur.Outcome, cur.Charged, cur.FinishedAt = jobs.Completed, jobs.Succeeded, 7, &done
		cur.Logs = []jobs.LogLine{{Message: "ok", Level: "info", Source: "runner", Timestamp: t0}}
		cur.Metrics = map[string]float64{"seconds": 1.5}
		return tx.UpdateJob(ctx, cur)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Jobs.JobByRequest(ctx, j.RequestID)
	if err != nil || !got.Settled() || got.Outcome != jobs.Succeeded || got.Charged != 7 || got.FinishedAt == nil || !got.FinishedAt.Equal(done) ||
		len(got.Logs) != 1 || !reflect.DeepEqual(got.Metrics, map[string]float64{"seconds": 1.5}) {
		t.Fatalf("after the transition: %+v %v", got, err)
	}
	// A settled job is never written again, whatever a caller read before.
	err = s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		stale := got
		stale.Status, stale.Outcome = jobs.InProgress, ""
		return tx.UpdateJob(ctx, stale)
	})
	if !errors.Is(err, jobs.ErrSettled) {
		t.Fatalf("update of a settled job: %v, want ErrSettled", err)
	}
	list, err := s.Jobs.ListJobs(ctx, "acct_j", t0.Add(time.Hour), 10)
	if err != nil || len(list) != 1 || list[0].ID != j.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// A settlement writes the settled job and its outbox event together (one statement on
// PostgreSQL); a second settlement of the same job answers ErrSettled and writes no event.
func testCloseJob(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_c", auth.Pro, 100)
	j := newJob("acct_c", "photo", "close-1", jobs.InProgress, t0)
	if err := insert(t, s.Jobs, j); err != nil {
		t.Fatal(err)
	}
	done := t0.Add(time.Minute)
	j.Status, j.Outcome, j.Charged, j.FinishedAt = jobs.Completed, jobs.Succeeded, 7, &done
	ev := jobs.Event{ID: "evt_" + j.ID + "_succeeded", AccountID: j.AccountID, JobID: j.ID, RequestID: j.RequestID, Type: "job.succeeded",
		Product: j.Product, Status: jobs.Succeeded, Charged: 7, Reserved: 10, Webhook: "https://example.com/hook", CreatedAt: done}
	// The engine closes a job whose settlement moves no credits in one statement, which
	// PostgreSQL runs without a transaction around it: the job and its event still go
	// together, and the second settlement is refused.
	closeJob := func() error {
		return s.Jobs.InOneStatement(ctx, func(tx jobs.Tx) error { return tx.CloseJob(ctx, j, &ev) })
	}
	if err := closeJob(); err != nil {
		t.Fatal(err)
	}
	if err := closeJob(); !errors.Is(err, jobs.ErrSettled) {
		t.Fatalf("second settlement: %v, want ErrSettled", err)
	}
	got, err := s.Jobs.JobByRequest(ctx, j.RequestID)
	if err != nil || !got.Settled() || got.Charged != 7 {
		t.Fatalf("settled job: %+v %v", got, err)
	}
	if s.Inspect.Dialect() == sqlstore.Postgres {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("a second statement in InOneStatement ran")
				}
			}()
			_ = s.Jobs.InOneStatement(ctx, func(tx jobs.Tx) error {
				_, _ = tx.CountQueuedOf(ctx, []string{"photo"}, nil)
				_, err := tx.CountQueuedOf(ctx, []string{"photo"}, nil)
				return err
			})
		}()
	}
	evs, err := s.Outbox.Pending(ctx, 10)
	if err != nil || len(evs) != 1 || evs[0].ID != ev.ID || evs[0].Charged != 7 || evs[0].Reserved != 10 || !evs[0].CreatedAt.Equal(done) {
		t.Fatalf("outbox: %+v %v", evs, err)
	}
}

// QST: the head of a model's queue is normal before low, oldest first; a claimed job is not
// claimed by a second transaction; overdue jobs are found by their start-by time.
func testClaims(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_q", auth.Pro, 100)
	low := newJob("acct_q", "photo", "low", jobs.InQueue, t0)
	low.Priority = jobs.Low
	old := newJob("acct_q", "photo", "old", jobs.InQueue, t0.Add(time.Second))
	young := newJob("acct_q", "photo", "young", jobs.InQueue, t0.Add(2*time.Second))
	by := t0.Add(time.Minute)
	young.StartBy = &by
	if err := insert(t, s.Jobs, young, low, old); err != nil {
		t.Fatal(err)
	}
	q, err := s.Jobs.Queued(ctx, "m-photo", 10)
	if err != nil || len(q) != 3 || q[0].ID != old.ID || q[1].ID != young.ID || q[2].ID != low.ID {
		t.Fatalf("queue order: %v %v", ids(q), err)
	}
	if n, err := s.Jobs.QueuePosition(ctx, low); err != nil || n != 2 {
		t.Fatalf("position of the low job: %d %v", n, err)
	}
	var claimed jobs.Job
	err = s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		counts, err := tx.CountQueuedOf(ctx, []string{"m-photo"}, nil)
		if w := counts["m-photo"]; err != nil || w != (jobs.Waiting{Normal: 2, Low: 1}) {
			return fmt.Errorf("queue length %+v %v, want 2 normal and 1 low", w, err)
		}
		if claimed, err = tx.ClaimQueued(ctx, "m-photo"); err != nil {
			return err
		}
		claimed.Status = jobs.InProgress
		return tx.UpdateJob(ctx, claimed)
	})
	if err != nil || claimed.ID != old.ID {
		t.Fatalf("claim: %s %v", claimed.ID, err)
	}
	err = s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		next, err := tx.ClaimQueued(ctx, "m-photo")
		if err == nil && next.ID != young.ID {
			return fmt.Errorf("second claim %s, want %s", next.ID, young.ID)
		}
		if _, err := tx.ClaimQueued(ctx, "m-none"); !errors.Is(err, jobs.ErrNotFound) {
			return fmt.Errorf("empty queue: %v", err)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	over, err := s.Jobs.Overdue(ctx, by.Add(time.Second), 10)
	if err != nil || len(over) != 1 || over[0].ID != young.ID {
		t.Fatalf("overdue: %v %v", ids(over), err)
	}
}

// JOB / crash recovery: a lease that ran out is stale; a heartbeat by its owner extends it and
// reports a cancellation asked meanwhile; another owner's heartbeat does nothing.
func testLeases(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_l", auth.Pro, 100)
	j := newJob("acct_l", "photo", "run", jobs.InProgress, t0)
	until := t0.Add(15 * time.Second)
	j.LeaseOwner, j.LeaseUntil, j.CancelAsked = "proc_a", &until, true
	if err := insert(t, s.Jobs, j); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Jobs.Stale(ctx, until, 10); err != nil || len(st) != 0 {
		t.Fatalf("stale at the lease's end: %v %v", ids(st), err)
	}
	if st, err := s.Jobs.Stale(ctx, until.Add(time.Millisecond), 10); err != nil || len(st) != 1 {
		t.Fatalf("stale after: %v %v", ids(st), err)
	}
	if c, err := s.Jobs.Heartbeat(ctx, "proc_b", []string{j.RequestID}, until.Add(time.Hour)); err != nil || len(c) != 0 {
		t.Fatalf("another owner's heartbeat: %v %v", c, err)
	}
	c, err := s.Jobs.Heartbeat(ctx, "proc_a", []string{j.RequestID}, until.Add(time.Minute))
	if err != nil || !reflect.DeepEqual(c, []string{j.RequestID}) {
		t.Fatalf("heartbeat: %v %v", c, err)
	}
	if st, _ := s.Jobs.Stale(ctx, until.Add(time.Second), 10); len(st) != 0 {
		t.Fatalf("still stale after the heartbeat: %v", ids(st))
	}
	if err := s.Jobs.AppendProgress(ctx, j.RequestID, []jobs.LogLine{{Message: "half", Level: "info", Source: "runner", Timestamp: t0}}, 0.5); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Jobs.JobByRequest(ctx, j.RequestID)
	if got.Progress != 0.5 || len(got.Logs) != 1 {
		t.Fatalf("progress: %+v", got)
	}
}

// The in-flight count reads only unsettled jobs, whatever the history.
func testInFlight(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_i", auth.Pro, 100)
	if err := s.Auth.InsertKey(ctx, key("ikey00000001", "acct_i", t0.AddDate(0, 3, 0)), 25, t0); err != nil {
		t.Fatal(err)
	}
	var js []jobs.Job
	for i, st := range []jobs.QueueStatus{jobs.Completed, jobs.InQueue, jobs.Completed, jobs.InProgress, jobs.Completed} {
		js = append(js, newJob("acct_i", "photo", fmt.Sprint("k", i), st, t0))
	}
	if err := insert(t, s.Jobs, js...); err != nil {
		t.Fatal(err)
	}
	var n int
	err := s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		held, err := tx.LedgerHold(ctx, []ledger.AccountKey{{AccountID: "acct_i", KeyID: "ikey00000001"}})
		n = held.InFlight["acct_i"]
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("in flight %d %v, want 2", n, err)
	}
}

// JOB / plan in-flight limits / CEIL: submits charged together hold their accounts
// (LedgerHold), which reads their keys and counts their in-flight jobs after the locks; both
// see what a transaction that held an account while they waited for it committed meanwhile:
// its job in the count, its charge in the key's spend. On PostgreSQL the keys with the counts
// are sent in the locks' round trip, a statement of its own after them. (SQLite's one writer runs the
// two transactions one after the other: there is no wait to race.)
func testHoldSeesLockHolder(t *testing.T, s Stores) {
	if s.Inspect.Dialect() != sqlstore.Postgres {
		t.Skip("SQLite runs one write transaction at a time")
	}
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_w", auth.Pro, 100)
	NewAccount(t, s.Ledger, "acct_x", auth.Pro, 100)
	for _, k := range []auth.KeyRecord{key("waitkey00001", "acct_w", t0.AddDate(0, 3, 0)), key("xkey00000001", "acct_x", t0.AddDate(0, 3, 0))} {
		if err := s.Auth.InsertKey(ctx, k, 25, t0); err != nil {
			t.Fatal(err)
		}
	}
	release, first := holdWithJob(t, s.Jobs, "acct_w", "waitkey00001", 10)
	var n map[string]int
	var ks []auth.KeyRecord
	second := make(chan error, 1)
	before := s.Inspect.PipelinedRoundTrips()
	go func() {
		second <- s.Jobs.InTx(ctx, func(tx jobs.Tx) (err error) {
			held, err := tx.LedgerHold(ctx, []ledger.AccountKey{{AccountID: "acct_w", KeyID: "waitkey00001"},
				{AccountID: "acct_x", KeyID: "xkey00000001"}})
			ks, n = held.Keys, held.InFlight
			return err
		})
	}()
	waitForLockWait(t, s.Inspect)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil || n["acct_w"] != 1 || n["acct_x"] != 0 {
		t.Fatalf("in flight once held: %v %v, want the lock holder's job (acct_w: 1) alone", n, err)
	}
	if len(ks) != 2 || ks[0].SpentIn(t0) != 10 {
		t.Fatalf("keys once held: %+v, want waitkey00001 with the lock holder's spend (10)", ks)
	}
	// The holder's COMMIT; then BEGIN, the locks, and the keys with the counts in one round trip,
	// and the COMMIT in another.
	if trips := s.Inspect.PipelinedRoundTrips() - before; trips != 3 {
		t.Fatalf("%d round trips, want 3", trips)
	}
}

// holdWithJob starts a transaction that holds account (read with key), charges spend to the key
// when it is not zero, and inserts a job of the account; it returns once all of that
// was sent. The transaction commits when release is closed, and answers on done.
func holdWithJob(t *testing.T, store jobs.Store, account, key string, spend int64) (release chan struct{}, done chan error) {
	t.Helper()
	ctx := context.Background()
	holding := make(chan struct{})
	release, done = make(chan struct{}), make(chan error, 1)
	go func() {
		done <- store.InTx(ctx, func(tx jobs.Tx) error {
			if _, err := tx.LedgerHold(ctx, []ledger.AccountKey{{AccountID: account, KeyID: key}}); err != nil {
				return err
			}
			if spend != 0 {
				e := ledger.Entry{AccountID: account, KeyID: key, JobID: "held", Kind: ledger.Charge, Amount: ledger.Credits(-spend), At: t0}
				if _, err := tx.LedgerApply(ctx, e, math.MinInt64); err != nil {
					return err
				}
			}
			if err := tx.InsertJobs(ctx, []jobs.Job{newJob(account, "photo", "held", jobs.InProgress, t0)}); err != nil {
				return err
			}
			if _, err := tx.CountQueuedOf(ctx, []string{"none"}, nil); err != nil { // the insert is sent
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	select {
	case <-holding:
	case err := <-done:
		t.Fatalf("the holding transaction ended first: %v", err)
	}
	return release, done
}

// waitForLockWait returns once a session of the database waits for a row lock.
func waitForLockWait(t *testing.T, in Inspect) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var waiting int
		if err := in.SQL().QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(time.Millisecond) // polling a condition; no outcome depends on the time
	}
	t.Fatal("the charge never waited for the account's lock")
}

// A job's charge and settlement through the ledger, in the job's transaction: the balance equals
// the sum of entries, the key's spend follows, and the usage rollup counts the charge and the
// refund per key, model and day.
func testLedgerRollup(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_r", auth.Pro, 1000)
	if err := s.Auth.InsertKey(ctx, key("rollupkey001", "acct_r", t0.AddDate(0, 3, 0)), 25, t0); err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s.Ledger, func() time.Time { return t0 })
	charge := func(tx ledger.Tx, j ledger.Job, at time.Time) (ledger.Charged, error) {
		_, c, err := l.Charge(ctx, tx, ledger.Request{Job: j, InFlightLimit: -1}, at)
		return c, err
	}
	run := func(jobID string, quote ledger.Credits, done float64, at time.Time) {
		t.Helper()
		err := s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
			j := ledger.Job{AccountID: "acct_r", KeyID: "rollupkey001", JobID: jobID, Model: "image-4b", Quote: quote}
			c, err := charge(tx, j, at)
			if err != nil {
				return err
			}
			_, err = l.Settle(ctx, tx, ledger.Settlement{Job: j, Reserved: c.Reserved, Done: done, Created: at}, at)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	run("photo_1", 100, 1, t0)
	run("photo_2", 50, 0.5, t0.Add(time.Hour))
	run("photo_3", 40, 0, t0.AddDate(0, 0, 1))
	a, _ := s.Auth.Account(ctx, "acct_r")
	sum, err := ledgerSum(ctx, s.Ledger, "acct_r")
	if err != nil || a.Balance != 1000-100-25 || sum != a.Balance {
		t.Fatalf("balance %d, ledger sum %d (%v), want 875", a.Balance, sum, err)
	}
	k, _ := s.Auth.Key(ctx, "rollupkey001")
	if k.SpentIn(t0) != 125 {
		t.Fatalf("key spend %d, want 125", k.SpentIn(t0))
	}
	month := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	got, err := s.Usage.LedgerUsageByKey(ctx, "acct_r", month, month.AddDate(0, 1, 0))
	want := []ledger.KeyUsage{{KeyID: "rollupkey001", Charged: 190, Refunded: 65, Jobs: 3}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("usage %+v %v, want %+v", got, err, want)
	}
	// One day of the window: the rollup is read by day.
	got, err = s.Usage.LedgerUsageByKey(ctx, "acct_r", t0.Truncate(24*time.Hour), t0.Truncate(24*time.Hour).Add(24*time.Hour))
	if err != nil || !reflect.DeepEqual(got, []ledger.KeyUsage{{KeyID: "rollupkey001", Charged: 150, Refunded: 25, Jobs: 2}}) {
		t.Fatalf("usage of one day %+v %v", got, err)
	}
	// A charge beyond the balance is refused and moves neither the balance nor the key's spend.
	err = s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
		_, err := charge(tx, ledger.Job{AccountID: "acct_r", KeyID: "rollupkey001", JobID: "photo_4", Model: "image-4b", Quote: 876}, t0)
		return err
	})
	a, _ = s.Auth.Account(ctx, "acct_r")
	k, _ = s.Auth.Key(ctx, "rollupkey001")
	if e, ok := apierr.As(err); !ok || e.Code != apierr.InsufficientCredits || a.Balance != 875 || k.SpentIn(t0) != 125 {
		t.Fatalf("debit beyond the balance: %v, balance %d, spend %d", err, a.Balance, k.SpentIn(t0))
	}
}

var (
	sqliteFullScan = regexp.MustCompile(`^SCAN (jobs|events|ledger_entries|usage_daily|usage_monthly|usage_daily_totals|accounts|api_keys)$`)
	pgSeqScan      = regexp.MustCompile(`Seq Scan on (jobs|events|ledger_entries|usage_daily|usage_monthly|usage_daily_totals|accounts|api_keys)\b`)
)

// The hot queries (submit, submits together, settle, claim, stale leases, overdue jobs,
// listing, usage) read
// through indexes on both databases: SQLite's plan never scans a table whole, and PostgreSQL's,
// with sequential scans priced out, still has no sequential scan (so an index serves it).
func testPlans(t *testing.T, s Stores) {
	ctx := context.Background()
	for _, name := range sqlstore.HotQueries(s.Inspect.Dialect()) {
		plan, err := s.Inspect.Explain(ctx, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(plan) == 0 {
			t.Fatalf("%s: empty plan", name)
		}
		for _, line := range plan {
			if sqliteFullScan.MatchString(line) || pgSeqScan.MatchString(line) {
				t.Errorf("%s reads a whole table: %v", name, plan)
			}
		}
		if name == "hold: keys and in-flight" && !regexp.MustCompile(`jobs_account_open`).MatchString(fmt.Sprint(plan)) {
			t.Errorf("the in-flight count does not read the partial index of unsettled jobs: %v", plan)
		}
		if name == "relay: pending events" && (!regexp.MustCompile(`SCAN events_pending\]|Index Scan using events_pending_pkey on events_pending`).MatchString(fmt.Sprint(plan)) ||
			regexp.MustCompile(`TEMP B-TREE|Sort`).MatchString(fmt.Sprint(plan))) {
			t.Errorf("the relay's read does not read the queue of pending events in its key's order: %v", plan)
		}
		// A job's own reads and writes name its whole key, and each is one lookup of it (a
		// settlement may instead look in the partial index of the account's unsettled jobs,
		// which holds only those).
		// A submit's queue lengths, normal and low apart, are searches of the waiting jobs'
		// index by model and priority.
		if name == "submit: queue lengths" && !regexp.MustCompile(`jobs_waiting`).MatchString(fmt.Sprint(plan)) {
			t.Errorf("the queue lengths do not read the index of waiting jobs: %v", plan)
		}
		if name == "submit: idempotency read" && !regexp.MustCompile(`jobs_idem_key`).MatchString(fmt.Sprint(plan)) {
			t.Errorf("the idempotency read does not look up the idempotency index: %v", plan)
		}
		if (name == "read: job by id" || name == "settle: job update") && !regexp.MustCompile(`sqlite_autoindex_jobs_\d \(id=\? AND account_id=\?\)|Index Scan using (jobs_pkey|jobs_account_open) on jobs`).MatchString(fmt.Sprint(plan)) {
			t.Errorf("%s does not look up the job's primary key: %v", name, plan)
		}
		if name == "usage: export rows" && regexp.MustCompile(`TEMP B-TREE|Sort`).MatchString(fmt.Sprint(plan)) {
			t.Errorf("the export's rows are sorted, not read in the rollup's key order: %v", plan)
		}
		t.Logf("%s: %v", name, plan)
	}
}

func ids(js []jobs.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

// The console's job list: filters by model, state and creation window, newest first, and a
// page after a cursor continues exactly where the previous one stopped, ties on created_at
// broken by id, another account's jobs never shown.
func testSearch(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_s", auth.Pro, 100)
	NewAccount(t, s.Ledger, "acct_o", auth.Pro, 100)
	var all []jobs.Job
	for i := range 12 {
		product := []string{"photo", "music"}[i%2]
		// Pairs share a creation time: the cursor must break ties by id.
		j := newJob("acct_s", product, fmt.Sprintf("s%02d", i), jobs.InQueue, t0.Add(time.Duration(i/2)*time.Minute))
		if i%3 == 0 {
			j.Status, j.Outcome = jobs.Completed, jobs.Failed
		}
		all = append(all, j)
	}
	other := newJob("acct_o", "photo", "o1", jobs.InQueue, t0)
	if err := insert(t, s.Jobs, append(all, other)...); err != nil {
		t.Fatal(err)
	}
	var seen []string
	var after *jobs.Cursor
	for page := 0; ; page++ {
		got, err := s.Jobs.SearchJobs(ctx, "acct_s", jobs.Search{After: after, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		if page > 5 {
			t.Fatal("paging does not end")
		}
		for _, j := range got {
			seen = append(seen, j.ID)
			if j.Input != nil || j.AccountID != "acct_s" {
				t.Fatalf("search answered %+v", j)
			}
		}
		last := got[len(got)-1]
		after = &jobs.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	want := []string{"photo_s10", "music_s11", "photo_s08", "music_s09", "photo_s06", "music_s07", "photo_s04", "music_s05",
		"photo_s02", "music_s03", "photo_s00", "music_s01"}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("pages %v, want %v", seen, want)
	}
	got, err := s.Jobs.SearchJobs(ctx, "acct_s", jobs.Search{Model: "m-photo", State: jobs.StateFailed, Limit: 50})
	if err != nil || !reflect.DeepEqual(ids(got), []string{"photo_s06", "photo_s00"}) {
		t.Fatalf("photo failed: %v %v", ids(got), err)
	}
	got, err = s.Jobs.SearchJobs(ctx, "acct_s", jobs.Search{State: jobs.StateQueued, From: t0.Add(time.Minute), To: t0.Add(3 * time.Minute), Limit: 50})
	if err != nil || !reflect.DeepEqual(ids(got), []string{"photo_s04", "music_s05", "photo_s02"}) {
		t.Fatalf("queued in window: %v %v", ids(got), err)
	}
}

// testEventsQueuedForAReceiver: every event is written, and it waits for the relay when
// something may receive it: a per-request callback, or an endpoint of its account in any
// state (the relay decides at fan-out which ones take it). An account without endpoints whose
// job has no callback leaves nothing to fan out (WH-26: the one event is still written).
func testEventsQueuedForAReceiver(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_none", auth.Pro, 0)
	NewAccount(t, s.Ledger, "acct_hooked", auth.Pro, 0)
	if _, err := s.Inspect.SQL().ExecContext(ctx, `INSERT INTO webhook_endpoints (id, account_id, url, status, created_at)
 VALUES ('wh_1', 'acct_hooked', 'https://example.com/endpoint', 'pending', 0)`); err != nil {
		t.Fatal(err)
	}
	event := func(id, account, webhook string) jobs.Event {
		return jobs.Event{ID: id, AccountID: account, JobID: "photo_" + id, RequestID: "req_" + id, Type: "job.succeeded",
			Product: "photo", Status: jobs.Succeeded, Charged: 3, Reserved: 3, Webhook: webhook, CreatedAt: t0}
	}
	err := s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		for _, ev := range []jobs.Event{event("evt_quiet", "acct_none", ""), event("evt_callback", "acct_none", "https://example.com/hook"),
			event("evt_endpoint", "acct_hooked", "")} {
			if err := tx.InsertEvent(ctx, ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var written int
	if err := s.Inspect.SQL().QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&written); err != nil || written != 3 {
		t.Fatalf("events written: %d %v, want all 3", written, err)
	}
	evs, err := s.Outbox.Pending(ctx, 10)
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	if err != nil || !slices.Equal(ids, []string{"evt_callback", "evt_endpoint"}) {
		t.Fatalf("pending %v %v, want the callback's and the endpoint's", ids, err)
	}
}

// RunEventsQueueMigration runs migration 00140 over a database of the release before it, whose
// events carried a fanned_out flag: the event not yet fanned out is still waiting afterwards,
// whole, the one fanned out is not, and an event written afterwards joins the queue (WH-26:
// the one event of a settled job reaches the relay across the upgrade).
func RunEventsQueueMigration(t *testing.T, openAt func(t testing.TB, version int64) Stores) {
	ctx := context.Background()
	s := openAt(t, 135)
	insert := `INSERT INTO events (account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at, fanned_out)
 VALUES ('acct_a', $1, $2, $3, 'job.succeeded', 'photo', 'succeeded', '', 7, 9, 'https://example.com/hook', 1700000000000000, $4)`
	for _, e := range [][]any{{"evt_sent", "photo_k1", "req_1", 1}, {"evt_waiting", "photo_k2", "req_2", 0}} {
		if _, err := s.Inspect.SQL().ExecContext(ctx, insert, e...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Inspect.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Outbox.Pending(ctx, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("pending after the migration %+v %v, want evt_waiting alone", evs, err)
	}
	e := evs[0]
	if e.ID != "evt_waiting" || e.Account != "acct_a" || e.JobID != "photo_k2" || e.RequestID != "req_2" || e.Type != "job.succeeded" ||
		e.Product != "photo" || e.Status != "succeeded" || e.Charged != 7 || e.Reserved != 9 || e.Webhook != "https://example.com/hook" ||
		e.CreatedAt.UnixMicro() != 1700000000000000 {
		t.Fatalf("the waiting event came through as %+v", e)
	}
	if _, err := s.Inspect.SQL().ExecContext(ctx, `INSERT INTO events (account_id, id, job_id, request_id, type, product, status, charged, reserved, webhook, created_at)
 VALUES ('acct_a', 'evt_new', 'photo_k3', 'req_3', 'job.failed', 'photo', 'failed', 0, 9, 'https://example.com/hook', 1700000001000000)`); err != nil {
		t.Fatal(err)
	}
	if err := s.Outbox.MarkFannedOut(ctx, []int64{e.Seq}); err != nil {
		t.Fatal(err)
	}
	if evs, err := s.Outbox.Pending(ctx, 10); err != nil || len(evs) != 1 || evs[0].ID != "evt_new" {
		t.Fatalf("pending after a new event and the first fanned out %+v %v, want evt_new alone", evs, err)
	}
}

// RunMintedKeysMigration runs migration 00150 over a database of the release before it, whose
// rows kept every key, minted ones included: a job whose key was minted then (a "k" and an id
// of its own) is still found by it, and its key still taken (JOB-28, JOB-29 across the upgrade).
func RunMintedKeysMigration(t *testing.T, openAt func(t testing.TB, version int64) Stores) {
	ctx := context.Background()
	s := openAt(t, 145)
	NewAccount(t, s.Ledger, "acct_m", auth.Pro, 100)
	old := newJob("acct_m", "photo", "k0190f5c2-0000-7000-8000-000000000001", jobs.Completed, t0)
	if err := insert(t, s.Jobs, old); err != nil {
		t.Fatal(err)
	}
	if err := s.Inspect.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Jobs.JobByIdempotencyKey(ctx, "acct_m", old.IdempotencyKey); err != nil || got.ID != old.ID || got.IdempotencyKey != old.IdempotencyKey {
		t.Fatalf("the job minted before the migration, by its key: %+v %v", got, err)
	}
	again := newJob("acct_m", "photo", old.IdempotencyKey, jobs.InQueue, t0.Add(time.Second))
	again.ID, again.RequestID = "photo_again", "req-again"
	if err := insert(t, s.Jobs, again); !errors.Is(err, jobs.ErrDuplicate) {
		t.Fatalf("a second job under the old minted key: %v, want ErrDuplicate", err)
	}
}
