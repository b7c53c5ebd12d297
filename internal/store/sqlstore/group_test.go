package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func openGroupDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "group.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.sql.raw.Exec(`CREATE TABLE group_rows (n INTEGER PRIMARY KEY)`); err != nil {
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

// Issue 10, throughput: transactions waiting together share one COMMIT; each runs in its own
// savepoint, so one that fails leaves the others' work in place and is itself undone, and
// every caller is answered only after the batch committed.
func TestGroupCommitBatchesAndIsolatesFailures(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	g := db.sql.group
	if g == nil {
		t.Fatal("SQLite has no group committer")
	}
	// Hold the writer so the committer stops at its first transaction and the rest queue up.
	db.sql.writer <- struct{}{}
	c0 := db.Commits()
	var wg sync.WaitGroup
	errs := make([]error, 11)
	insert := func(i int) {
		defer wg.Done()
		errs[i] = db.InTx(ctx, func(tx *Tx) error {
			if _, err := tx.q.ExecContext(ctx, `INSERT INTO group_rows (n) VALUES ($1)`, i); err != nil {
				return err
			}
			if i%2 == 1 {
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
	<-db.sql.writer
	wg.Wait()

	for i, err := range errs {
		if i%2 == 1 && !errors.Is(err, errRefused) {
			t.Errorf("transaction %d: err %v, want its own refusal", i, err)
		}
		if i%2 == 0 && err != nil {
			t.Errorf("transaction %d: %v", i, err)
		}
	}
	if got := db.Commits() - c0; got != 2 {
		t.Errorf("11 transactions took %d commits, want 2 (one alone, then ten in one batch)", got)
	}
	rows, err := db.sql.raw.Query(`SELECT n FROM group_rows ORDER BY n`)
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
	want := []int{0, 2, 4, 6, 8, 10}
	if len(kept) != len(want) {
		t.Fatalf("rows kept %v, want %v", kept, want)
	}
	for i := range want {
		if kept[i] != want[i] {
			t.Fatalf("rows kept %v, want %v", kept, want)
		}
	}
}

// A caller whose context ended while it waited for its turn is not run; a panic inside a
// batched transaction reaches its own caller and the batch's other work still commits.
func TestGroupCommitCancelledAndPanicking(t *testing.T) {
	db := openGroupDB(t)
	g := db.sql.group
	db.sql.writer <- struct{}{}
	var wg sync.WaitGroup
	run := func(ctx context.Context, n int, panics bool, out *error, recovered *any) {
		defer wg.Done()
		defer func() {
			if recovered != nil {
				*recovered = recover()
			}
		}()
		*out = db.InTx(ctx, func(tx *Tx) error {
			if _, err := tx.q.ExecContext(ctx, `INSERT INTO group_rows (n) VALUES ($1)`, n); err != nil {
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
	<-db.sql.writer
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
	if err := db.sql.raw.QueryRow(`SELECT count(*) FROM group_rows WHERE n IN (0, 3)`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("committed rows %d (%v), want 0 and 3", n, err)
	}
	if err := db.sql.raw.QueryRow(`SELECT count(*) FROM group_rows WHERE n IN (1, 2)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows of the cancelled and the panicking transaction: %d (%v), want none", n, err)
	}
}
