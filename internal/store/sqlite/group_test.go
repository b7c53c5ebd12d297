package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"time"
)

func openGroupDB(t *testing.T) *conn {
	t.Helper()
	db, err := openConn(context.Background(), filepath.Join(t.TempDir(), "group.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.raw.Exec(`CREATE TABLE group_rows (n INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// waitFor polls cond while the committer goroutine catches up (no sleep decides the outcome:
// the test fails only if cond never holds).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

var errRefused = errors.New("refused")

// Issue 10, throughput: transactions waiting together share one COMMIT; one that fails leaves
// the others' work in place and is itself undone, and every caller is answered only after the
// batch committed. Transactions queued while a batch runs join it before its COMMIT. A batch
// runs without savepoints until a function fails: then it is rolled back, the failure answered,
// and the rest run again, each in its own savepoint (Commits counts both transactions begun).
// When the batch's first transaction fails while still alone, it is rolled back before any
// joined, and the queued ones make a batch of their own.
func TestGroupCommitBatchesAndIsolatesFailures(t *testing.T) {
	for _, tc := range []struct {
		name        string
		oddFail     bool
		firstFails  bool
		wantCommits int64
		wantKept    []int
	}{
		// 0 runs alone, 1–10 join; 1 fails: rolled back, then 0 and 2–10 again with savepoints.
		// None fails: one transaction, no savepoint, each function run once.
		{"none fails", false, false, 1, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"the queued join the first", true, false, 2, []int{0, 2, 4, 6, 8, 10}},
		// 0 fails alone; 1–10 then run together, 1 fails, and 2–10 run again with savepoints.
		{"the first fails alone", true, true, 3, []int{2, 4, 6, 8, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openGroupDB(t)
			ctx := context.Background()
			g := db.group
			if g == nil {
				t.Fatal("SQLite has no group committer")
			}
			// Hold the writer so the committer stops at its first transaction and the rest queue up.
			db.writer <- struct{}{}
			c0 := db.commits.Load()
			var wg sync.WaitGroup
			errs := make([]error, 11)
			refused := func(i int) bool { return (tc.oddFail && i%2 == 1) || (i == 0 && tc.firstFails) }
			runs := make([]atomic.Int32, 11)
			insert := func(i int) {
				defer wg.Done()
				errs[i] = db.InTx(ctx, func(tx sqlstore.Querier) error {
					runs[i].Add(1)
					if _, err := tx.ExecContext(ctx, `INSERT INTO group_rows (n) VALUES ($1)`, i); err != nil {
						return err
					}
					if refused(i) {
						return errRefused // written, then refused: must not be kept
					}
					return nil
				})
			}
			wg.Add(1)
			go insert(0)
			waitFor(t, func() bool { return g.taken.Load() == 1 })
			// The committer holds transaction 0 and waits for the writer; queue ten more.
			for i := 1; i <= 10; i++ {
				wg.Add(1)
				go insert(i)
			}
			waitFor(t, func() bool { return len(g.queue) == 10 })
			<-db.writer
			wg.Wait()

			for i, err := range errs {
				if refused(i) && !errors.Is(err, errRefused) {
					t.Errorf("transaction %d: err %v, want its own refusal", i, err)
				}
				if !refused(i) && err != nil {
					t.Errorf("transaction %d: %v", i, err)
				}
			}
			if !tc.oddFail && !tc.firstFails {
				for i := range runs {
					if n := runs[i].Load(); n != 1 {
						t.Errorf("transaction %d ran %d times, want once", i, n)
					}
				}
			}
			if got := db.commits.Load() - c0; got != tc.wantCommits {
				t.Errorf("11 transactions took %d commits, want %d", got, tc.wantCommits)
			}
			rows, err := db.raw.Query(`SELECT n FROM group_rows ORDER BY n`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var kept []int
			for rows.Next() {
				var n int
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				kept = append(kept, n)
			}
			if fmt.Sprint(kept) != fmt.Sprint(tc.wantKept) {
				t.Fatalf("rows kept %v, want %v", kept, tc.wantKept)
			}
		})
	}
}

// A caller whose context ended while it waited for its turn is not run; a panic inside a
// batched transaction reaches its own caller and the batch's other work still commits.
func TestGroupCommitCancelledAndPanicking(t *testing.T) {
	db := openGroupDB(t)
	g := db.group
	db.writer <- struct{}{}
	var wg sync.WaitGroup
	run := func(ctx context.Context, n int, panics bool, out *error, recovered *any) {
		defer wg.Done()
		defer func() {
			if recovered != nil {
				*recovered = recover()
			}
		}()
		*out = db.InTx(ctx, func(tx sqlstore.Querier) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO group_rows (n) VALUES ($1)`, n); err != nil {
				return err
			}
			if panics {
				panic("runner bug")
			}
			return nil
		})
	}
	var e0, e1, e2, e3 error
	var p2 any
	wg.Add(1)
	go run(context.Background(), 0, false, &e0, nil)
	waitFor(t, func() bool { return g.taken.Load() == 1 })
	cctx, cancel := context.WithCancel(context.Background())
	wg.Add(3)
	go run(cctx, 1, false, &e1, nil)
	waitFor(t, func() bool { return len(g.queue) == 1 })
	go run(context.Background(), 2, true, &e2, &p2)
	waitFor(t, func() bool { return len(g.queue) == 2 })
	go run(context.Background(), 3, false, &e3, nil)
	waitFor(t, func() bool { return len(g.queue) == 3 })
	cancel()
	<-db.writer
	wg.Wait()
	if e0 != nil || e3 != nil {
		t.Fatalf("healthy transactions failed: %v, %v", e0, e3)
	}
	if !errors.Is(e1, context.Canceled) {
		t.Errorf("cancelled caller: %v, want context.Canceled", e1)
	}
	if p2 != "runner bug" {
		t.Errorf("panic reached its caller as %v", p2)
	}
	var n int
	if err := db.raw.QueryRow(`SELECT count(*) FROM group_rows WHERE n IN (0, 3)`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("committed rows %d (%v), want 0 and 3", n, err)
	}
	if err := db.raw.QueryRow(`SELECT count(*) FROM group_rows WHERE n IN (1, 2)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows of the cancelled and the panicking transaction: %d (%v), want none", n, err)
	}
}

// With nothing queued and the write lock free, a transaction is committed on its caller's
// goroutine (its function sees its caller's stack), with the same answers as in a batch: a
// refusal is rolled back, a panic reaches its caller. Closing the database meanwhile waits for
// it to end.
func TestGroupCommitAloneOnCallersGoroutine(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	c0 := db.commits.Load()
	var stack string
	if err := db.InTx(ctx, func(tx sqlstore.Querier) error {
		buf := make([]byte, 64<<10)
		stack = string(buf[:runtime.Stack(buf, false)])
		_, err := tx.ExecContext(ctx, `INSERT INTO group_rows (n) VALUES (1)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stack, "TestGroupCommitAloneOnCallersGoroutine") {
		t.Errorf("the transaction ran on another goroutine:\n%s", stack)
	}
	if got := db.commits.Load() - c0; got != 1 {
		t.Errorf("one transaction took %d commits", got)
	}
	err := db.InTx(ctx, func(tx sqlstore.Querier) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO group_rows (n) VALUES (2)`); err != nil {
			return err
		}
		return errRefused
	})
	if !errors.Is(err, errRefused) {
		t.Errorf("refused alone: %v", err)
	}
	func() {
		defer func() {
			if v := recover(); v != "runner bug" {
				t.Errorf("panic reached its caller as %v", v)
			}
		}()
		_ = db.InTx(ctx, func(tx sqlstore.Querier) error { panic("runner bug") })
	}()

	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.InTx(ctx, func(tx sqlstore.Querier) error {
			close(entered)
			<-release
			_, err := tx.ExecContext(ctx, `INSERT INTO group_rows (n) VALUES (3)`)
			return err
		})
	}()
	<-entered
	closed := make(chan struct{})
	go func() { db.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("the database closed under a running transaction")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("the transaction running at close: %v", err)
	}
	<-closed
}
